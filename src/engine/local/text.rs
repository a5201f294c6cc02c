//! Turning token bytes into text: UTF-8 reassembly across tokens, and stop
//! strings that may span several tokens.

/// Reassembles UTF-8 from token pieces that may split a character:
/// encoding_rs's streaming decoder.
pub struct Utf8Stream {
    decoder: encoding_rs::Decoder,
}

impl Default for Utf8Stream {
    fn default() -> Self {
        Utf8Stream {
            decoder: encoding_rs::UTF_8.new_decoder_without_bom_handling(),
        }
    }
}

impl std::fmt::Debug for Utf8Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Utf8Stream")
    }
}

impl Utf8Stream {
    /// Adds bytes and returns the text that is complete so far. Invalid bytes
    /// become U+FFFD; an incomplete character at the end waits for more.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.decode(bytes, false)
    }

    /// Whatever is left, lossily.
    pub fn finish(&mut self) -> String {
        let out = self.decode(&[], true);
        self.decoder = encoding_rs::UTF_8.new_decoder_without_bom_handling();
        out
    }

    fn decode(&mut self, bytes: &[u8], last: bool) -> String {
        let room = self
            .decoder
            .max_utf8_buffer_length(bytes.len())
            .unwrap_or(bytes.len() * 3 + 4);
        let mut out = String::with_capacity(room);
        // With room for the worst case, all input is read in one call.
        let _ = self.decoder.decode_to_string(bytes, &mut out, last);
        out
    }
}

/// Holds back text that might be the start of a stop string, and reports
/// the first complete one.
#[derive(Debug, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    held: String,
}

impl StopMatcher {
    pub fn new(stops: &[String]) -> Self {
        Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            held: String::new(),
        }
    }

    /// Adds text; returns what is safe to emit and whether a stop string was hit
    /// (the stop string itself and anything after it are dropped).
    pub fn push(&mut self, text: &str) -> (String, bool) {
        self.held.push_str(text);
        if let Some(at) = self.stops.iter().filter_map(|s| self.held.find(s.as_str())).min() {
            let out = self.held[..at].to_owned();
            self.held.clear();
            return (out, true);
        }
        let keep = self.partial_suffix_len();
        let cut = self.held.len() - keep;
        let out = self.held[..cut].to_owned();
        self.held.drain(..cut);
        (out, false)
    }

    /// The text held back at the end of generation.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// Length of the longest suffix of `held` that is a proper prefix of a stop string.
    fn partial_suffix_len(&self) -> usize {
        let held = self.held.as_str();
        self.stops
            .iter()
            .flat_map(|stop| {
                (1..stop.len().min(held.len() + 1))
                    .rev()
                    .filter(|&n| stop.is_char_boundary(n) && held.is_char_boundary(held.len() - n))
                    .find(|&n| held.ends_with(&stop[..n]))
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_across_pieces() {
        let bytes = "héllo ✓".as_bytes();
        let mut s = Utf8Stream::default();
        let mut out = String::new();
        for b in bytes {
            out.push_str(&s.push(std::slice::from_ref(b)));
        }
        out.push_str(&s.finish());
        assert_eq!(out, "héllo ✓");
    }

    #[test]
    fn utf8_invalid_bytes_are_replaced() {
        let mut s = Utf8Stream::default();
        assert_eq!(s.push(b"a\xffb"), "a\u{fffd}b");
        assert_eq!(s.push(b"\xe2\x9c"), "");
        assert_eq!(s.finish(), "\u{fffd}");
    }

    #[test]
    fn stop_spanning_pieces() {
        let mut m = StopMatcher::new(&["</end>".into()]);
        assert_eq!(m.push("hello </"), ("hello ".into(), false));
        assert_eq!(m.push("en"), ("".into(), false));
        assert_eq!(m.push("d> tail"), ("".into(), true));
    }

    #[test]
    fn false_start_is_released() {
        let mut m = StopMatcher::new(&["STOP".into()]);
        assert_eq!(m.push("ST"), ("".into(), false));
        assert_eq!(m.push("ART"), ("START".into(), false));
        assert_eq!(m.push("S"), ("".into(), false));
        assert_eq!(m.finish(), "S");
    }

    #[test]
    fn earliest_of_several_stops_wins() {
        let mut m = StopMatcher::new(&["b".into(), "a".into()]);
        assert_eq!(m.push("xxab"), ("xx".into(), true));
    }

    #[test]
    fn no_stops_passes_through() {
        let mut m = StopMatcher::new(&[]);
        assert_eq!(m.push("anything"), ("anything".into(), false));
    }
}
