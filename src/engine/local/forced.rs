//! Text a JSON schema leaves no choice about, written without asking the
//! model token by token.
//!
//! When a schema holds an object member to an `enum` of strings (say a
//! quote that must be one of an output's lines), the grammar decides the
//! rest of the string as soon as what was generated of it matches the start
//! of one value only. [`Forced`] follows the generated JSON and names that
//! rest; the worker checks each of its tokens against the grammar and
//! decodes them in one batch, which on a CPU costs a few single steps
//! rather than one per token. The text is what the grammar would have
//! allowed anyway: only the tokens that spell it may differ.

use std::collections::HashMap;

/// The string values each enum-held member name may take, JSON-escaped as
/// they appear in the output, each with its closing quote (so that a value
/// that is the start of another is told apart once it is closed).
#[derive(Debug, Default)]
pub struct Forced {
    members: HashMap<String, Vec<String>>,
    cursor: Cursor,
}

impl Forced {
    /// `None` when no member of `schema` is held to an enum of strings. A
    /// member name that also occurs with another kind of value anywhere in
    /// the schema is left out: its strings are not decided by the name.
    pub fn from_schema(schema: &serde_json::Value) -> Option<Forced> {
        let mut found: HashMap<String, Option<Vec<String>>> = HashMap::new();
        collect(schema, &mut found);
        let members: HashMap<String, Vec<String>> = found
            .into_iter()
            .filter_map(|(name, values)| Some((name, values?)))
            .filter(|(_, values)| !values.is_empty())
            .collect();
        (!members.is_empty()).then(|| Forced {
            members,
            cursor: Cursor::default(),
        })
    }

    /// Follows `text`, the next part of the generated output.
    pub fn push(&mut self, text: &str) {
        text.chars().for_each(|c| self.cursor.push(c));
    }

    /// The rest of the string being generated, when the grammar allows only
    /// one: the member is enum-held and what was written of the value starts
    /// exactly one of its values. The closing quote is left to the model,
    /// which spells it together with what follows (`"},` is one token in
    /// many vocabularies) where a lone quote would lead it astray.
    pub fn rest(&self) -> Option<&str> {
        let (member, written) = self.cursor.open_value()?;
        let values = self.members.get(member)?;
        let mut matching = values.iter().filter(|v| v.starts_with(written));
        let only = matching.next()?;
        let rest = &only[written.len()..only.len() - 1];
        (matching.next().is_none() && !rest.is_empty()).then_some(rest)
    }
}

/// Gathers, per member name, its enum's escaped strings, or `None` once the
/// name is seen with anything else.
fn collect(schema: &serde_json::Value, found: &mut HashMap<String, Option<Vec<String>>>) {
    match schema {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(properties)) = map.get("properties") {
                for (name, property) in properties {
                    let values = string_enum(property);
                    let entry = found.entry(name.clone()).or_insert_with(|| Some(Vec::new()));
                    match (values, entry.as_mut()) {
                        (Some(values), Some(known)) => known.extend(values),
                        _ => *entry = None,
                    }
                }
            }
            map.values().for_each(|v| collect(v, found));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect(v, found)),
        _ => {}
    }
}

/// The values of a property schema that is exactly an enum of strings, as
/// they are written in JSON after the opening quote.
fn string_enum(property: &serde_json::Value) -> Option<Vec<String>> {
    let map = property.as_object()?;
    if map
        .keys()
        .any(|k| !matches!(k.as_str(), "enum" | "type" | "description" | "title"))
    {
        return None;
    }
    if map.get("type").is_some_and(|t| t != "string") {
        return None;
    }
    map.get("enum")?
        .as_array()?
        .iter()
        .map(|v| Some(serde_json::to_string(v.as_str()?).ok()?[1..].to_owned()))
        .collect()
}

/// Where generated JSON text stands: inside a string or not, and whether
/// that string is a member's value.
#[derive(Debug, Default)]
struct Cursor {
    /// The raw text of the string being written, escapes as written.
    string: Option<String>,
    /// The member whose value the open string is.
    value_of: Option<String>,
    escaped: bool,
    /// The last string closed, a member name if a `:` follows.
    last_string: String,
    /// The member whose value comes next (after `:`).
    member: Option<String>,
    /// The last character outside strings that is not white space.
    last_mark: char,
}

impl Cursor {
    fn push(&mut self, c: char) {
        if let Some(string) = &mut self.string {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == '"' {
                self.last_string = std::mem::take(string);
                self.string = None;
                self.value_of = None;
                self.last_mark = '"';
                return;
            }
            string.push(c);
            return;
        }
        match c {
            '"' => {
                self.value_of = (self.last_mark == ':').then(|| self.member.take()).flatten();
                self.string = Some(String::new());
            }
            ':' if self.last_mark == '"' => {
                self.member = Some(std::mem::take(&mut self.last_string));
                self.last_mark = c;
            }
            c if c.is_whitespace() => {}
            c => {
                self.member = None;
                self.last_mark = c;
            }
        }
    }

    /// The member and what is written of its value, while a member's string
    /// value is open.
    fn open_value(&self) -> Option<(&str, &str)> {
        Some((self.value_of.as_deref()?, self.string.as_deref()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "failures": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": { "type": "string" },
                            "quote": { "type": "string", "enum": [
                                "a.c:3: error: 'x' undeclared",
                                "a.c:9: error: \"y\" is \\ odd",
                                "make: *** Error 1"
                            ] }
                        }
                    }
                }
            }
        })
    }

    fn after(text: &str) -> Option<String> {
        let mut f = Forced::from_schema(&schema()).unwrap();
        f.push(text);
        f.rest().map(str::to_owned)
    }

    #[test]
    fn the_rest_of_an_enum_value_is_forced_once_its_start_is_unique() {
        let start = r#"{"failures": [{"name": "a.c", "quote": ""#;
        // Two values start with "a.c:": nothing is decided yet.
        assert_eq!(after(&format!("{start}a.c:")), None);
        assert_eq!(
            after(&format!("{start}a.c:3")).as_deref(),
            Some(": error: 'x' undeclared")
        );
        assert_eq!(after(&format!("{start}m")).as_deref(), Some("ake: *** Error 1"));
        // Escapes are compared as written.
        assert_eq!(
            after(&format!("{start}a.c:9: error: \\\"y")).as_deref(),
            Some("\\\" is \\\\ odd")
        );
        // A whole value written: only the closing quote is left, to the model.
        assert_eq!(after(&format!("{start}make: *** Error 1")), None);
        // Nothing written yet, or a start no value has: nothing is forced.
        assert_eq!(after(start), None);
        assert_eq!(after(&format!("{start}zz")), None);
        // Once the value is closed, nothing is open.
        assert_eq!(after(&format!("{start}make: *** Error 1\"")), None);
    }

    #[test]
    fn free_strings_and_member_names_are_never_forced() {
        // The name's value is free, even when it starts like an enum value.
        assert_eq!(after(r#"{"failures": [{"name": "make: *"#), None);
        // A member name being written is no value.
        assert_eq!(after(r#"{"failures": [{"quote"#), None);
        // A second item follows the first's state cleanly.
        let two = r#"{"failures": [{"name": "x", "quote": "make: *** Error 1"}, {"name": "y", "quote": "a.c:3"#;
        assert_eq!(after(two).as_deref(), Some(": error: 'x' undeclared"));
        // An enum value inside an array is an element, not a member value.
        assert_eq!(after(r#"{"failures": ["make"#), None);
    }

    #[test]
    fn schemas_without_string_enums_force_nothing() {
        assert!(Forced::from_schema(&json!({"type": "object", "properties": {"a": {"type": "string"}}})).is_none());
        assert!(Forced::from_schema(&json!({"properties": {"n": {"enum": [1, 2]}}})).is_none());
        // The same name held to an enum in one place and free in another.
        let mixed = json!({"properties": {
            "a": {"enum": ["left"]},
            "b": {"properties": {"a": {"type": "string"}}}
        }});
        assert!(Forced::from_schema(&mixed).is_none());
    }
}
