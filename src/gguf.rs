//! A pre-check of GGUF files in Rust, run before a file reaches llama.cpp, so
//! that a missing, foreign, truncated or hostile file is a clear error rather
//! than a crash inside C++.
//!
//! It walks the header, every metadata entry and every tensor descriptor,
//! checking that counts and lengths are sane and that each tensor's data
//! offset lies inside the file. It does not read tensor data.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 4] = b"GGUF";
/// Upper bounds far above any real model, low enough to stop hostile counts
/// from driving huge allocations or loops.
const MAX_TENSORS: u64 = 1 << 20;
const MAX_KV: u64 = 1 << 20;
const MAX_STRING: u64 = 16 << 20;
const MAX_DIMS: u32 = 8;
const MAX_NESTING: u32 = 4;

/// Why a file is not a usable GGUF model.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("model file {0} does not exist")]
    Missing(PathBuf),
    #[error("cannot read model file {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{0} is not a GGUF file (it does not start with the bytes \"GGUF\")")]
    NotGguf(PathBuf),
    #[error("{path} is GGUF version {version}; versions 2 and 3 are supported")]
    Version { path: PathBuf, version: u32 },
    #[error("{path} is truncated or corrupt: {what}")]
    Corrupt { path: PathBuf, what: String },
}

/// What the pre-check learned about a valid file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufSummary {
    pub version: u32,
    pub tensors: u64,
    pub metadata: u64,
    pub file_size: u64,
    /// `general.architecture`, when present.
    pub architecture: Option<String>,
}

/// Checks the file at `path`. Only a regular file is opened: a FIFO or a
/// device would block the open or never end.
pub fn check(path: &Path) -> Result<GgufSummary, GgufError> {
    let kind = std::fs::metadata(path)
        .map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => GgufError::Missing(path.to_owned()),
            _ => GgufError::Io {
                path: path.to_owned(),
                source,
            },
        })?
        .file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return Err(GgufError::Io {
            path: path.to_owned(),
            source: io::Error::new(io::ErrorKind::InvalidInput, format!("it is {what}; give a .gguf file")),
        });
    }
    let file = File::open(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => GgufError::Missing(path.to_owned()),
        _ => GgufError::Io {
            path: path.to_owned(),
            source,
        },
    })?;
    let meta = file.metadata().map_err(|source| GgufError::Io {
        path: path.to_owned(),
        source,
    })?;
    check_reader(BufReader::new(file), meta.len()).map_err(|e| e.with_path(path))
}

/// What identifies a file's contents cheaply: its device, inode, size and
/// modification time. A model file replaced or rewritten under a running
/// server changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileStamp {
    pub fn of(path: &Path) -> io::Result<FileStamp> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path)?;
        Ok(FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }

    /// How `now` differs from this stamp, in words; `None` when it does not.
    pub fn change(&self, now: &io::Result<FileStamp>) -> Option<String> {
        match now {
            Err(e) => Some(format!("it can no longer be read ({e})")),
            Ok(now) if (now.dev, now.ino) != (self.dev, self.ino) => Some("it was replaced by another file".into()),
            Ok(now) if now.len != self.len => Some(format!("its size went from {} to {} bytes", self.len, now.len)),
            Ok(now) if now.modified != self.modified => Some("it was rewritten".into()),
            Ok(_) => None,
        }
    }
}

/// Checks GGUF bytes from any reader; `file_size` bounds every length read.
pub fn check_bytes(bytes: &[u8]) -> Result<GgufSummary, GgufError> {
    check_reader(bytes, bytes.len() as u64).map_err(|e| e.with_path(Path::new("<memory>")))
}

/// A failure before the path is known.
enum Fault {
    NotGguf,
    Version(u32),
    Corrupt(String),
    Io(io::Error),
}

impl Fault {
    fn with_path(self, path: &Path) -> GgufError {
        let path = path.to_owned();
        match self {
            Fault::NotGguf => GgufError::NotGguf(path),
            Fault::Version(version) => GgufError::Version { path, version },
            Fault::Corrupt(what) => GgufError::Corrupt { path, what },
            Fault::Io(source) => GgufError::Io { path, source },
        }
    }
}

struct Cursor<R> {
    inner: R,
    pos: u64,
    size: u64,
}

impl<R: Read> Cursor<R> {
    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, Fault> {
        self.ensure(n, what)?;
        let mut buf = vec![0; n as usize];
        self.inner.read_exact(&mut buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => Fault::Corrupt(format!("file ends inside {what}")),
            _ => Fault::Io(e),
        })?;
        self.pos += n;
        Ok(buf)
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<(), Fault> {
        self.ensure(n, what)?;
        let copied = io::copy(&mut (&mut self.inner).take(n), &mut io::sink()).map_err(Fault::Io)?;
        if copied != n {
            return Err(Fault::Corrupt(format!("file ends inside {what}")));
        }
        self.pos += n;
        Ok(())
    }

    fn ensure(&self, n: u64, what: &str) -> Result<(), Fault> {
        if self.size.saturating_sub(self.pos) < n {
            return Err(Fault::Corrupt(format!(
                "{what} needs {n} bytes at offset {} but the file has {}",
                self.pos, self.size
            )));
        }
        Ok(())
    }

    fn u32(&mut self, what: &str) -> Result<u32, Fault> {
        Ok(u32::from_le_bytes(self.bytes(4, what)?.try_into().expect("4 bytes")))
    }

    fn u64(&mut self, what: &str) -> Result<u64, Fault> {
        Ok(u64::from_le_bytes(self.bytes(8, what)?.try_into().expect("8 bytes")))
    }

    fn string(&mut self, what: &str) -> Result<Vec<u8>, Fault> {
        let len = self.u64(what)?;
        if len > MAX_STRING {
            return Err(Fault::Corrupt(format!("{what} claims a length of {len} bytes")));
        }
        self.bytes(len, what)
    }
}

/// Byte size of a scalar metadata type, or `None` for string and array.
fn scalar_size(ty: u32) -> Result<Option<u64>, Fault> {
    Ok(match ty {
        0 | 1 | 7 => Some(1), // u8, i8, bool
        2 | 3 => Some(2),     // u16, i16
        4..=6 => Some(4),     // u32, i32, f32
        10..=12 => Some(8),   // u64, i64, f64
        8 | 9 => None,        // string, array
        other => return Err(Fault::Corrupt(format!("unknown metadata value type {other}"))),
    })
}

fn check_reader<R: Read>(inner: R, size: u64) -> Result<GgufSummary, Fault> {
    let mut c = Cursor { inner, pos: 0, size };
    let magic = c.bytes(4, "the magic number").map_err(|_| Fault::NotGguf)?;
    if magic != MAGIC {
        return Err(Fault::NotGguf);
    }
    let version = c.u32("the version")?;
    if !(2..=3).contains(&version) {
        return Err(Fault::Version(version));
    }
    let tensors = c.u64("the tensor count")?;
    let metadata = c.u64("the metadata count")?;
    if tensors > MAX_TENSORS {
        return Err(Fault::Corrupt(format!("it claims {tensors} tensors")));
    }
    if metadata > MAX_KV {
        return Err(Fault::Corrupt(format!("it claims {metadata} metadata entries")));
    }

    let mut alignment = 32u64;
    let mut architecture = None;
    for i in 0..metadata {
        let key = c.string(&format!("metadata key #{i}"))?;
        let ty = c.u32("a metadata value type")?;
        let key = String::from_utf8_lossy(&key).into_owned();
        match (key.as_str(), ty) {
            ("general.alignment", 4) => {
                alignment = u64::from(c.u32("general.alignment")?);
                if alignment == 0 || !alignment.is_power_of_two() {
                    return Err(Fault::Corrupt(format!("general.alignment is {alignment}")));
                }
            }
            ("general.architecture", 8) => {
                architecture = Some(String::from_utf8_lossy(&c.string("general.architecture")?).into_owned());
            }
            _ => skip_value(&mut c, ty, &key, 0)?,
        }
    }

    let mut data_extent = 0u64;
    for i in 0..tensors {
        let what = format!("tensor descriptor #{i}");
        c.string(&what)?;
        let dims = c.u32(&what)?;
        if dims == 0 || dims > MAX_DIMS {
            return Err(Fault::Corrupt(format!("{what} has {dims} dimensions")));
        }
        for _ in 0..dims {
            if c.u64(&what)? == 0 {
                return Err(Fault::Corrupt(format!("{what} has a zero-sized dimension")));
            }
        }
        c.u32(&what)?; // element type; llama.cpp validates it
        let offset = c.u64(&what)?;
        if offset % alignment != 0 {
            return Err(Fault::Corrupt(format!("{what} has a misaligned data offset {offset}")));
        }
        data_extent = data_extent.max(offset);
    }
    let data_start = c.pos.div_ceil(alignment) * alignment;
    if tensors > 0 && data_start.saturating_add(data_extent) >= size {
        return Err(Fault::Corrupt(format!(
            "tensor data starts past the end of the file (offset {} of {size} bytes)",
            data_start.saturating_add(data_extent)
        )));
    }
    Ok(GgufSummary {
        version,
        tensors,
        metadata,
        file_size: size,
        architecture,
    })
}

fn skip_value<R: Read>(c: &mut Cursor<R>, ty: u32, key: &str, depth: u32) -> Result<(), Fault> {
    match scalar_size(ty)? {
        Some(n) => c.skip(n, key),
        None if ty == 8 => {
            c.string(key)?;
            Ok(())
        }
        None => {
            if depth >= MAX_NESTING {
                return Err(Fault::Corrupt(format!("{key} nests arrays too deeply")));
            }
            let item = c.u32(key)?;
            let count = c.u64(key)?;
            match scalar_size(item)? {
                Some(n) => c.skip(
                    count
                        .checked_mul(n)
                        .ok_or_else(|| Fault::Corrupt(format!("{key} claims {count} items")))?,
                    key,
                ),
                None => {
                    // Each string or array item takes at least 8 bytes.
                    c.ensure(count.saturating_mul(8), key)?;
                    for _ in 0..count {
                        skip_value(c, item, key, depth + 1)?;
                    }
                    Ok(())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(version: u32, tensors: u64, kv: u64) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend(version.to_le_bytes());
        b.extend(tensors.to_le_bytes());
        b.extend(kv.to_le_bytes());
        b
    }

    #[test]
    fn rejects_foreign_bytes() {
        assert!(matches!(
            check_bytes(b"PK\x03\x04 not a model"),
            Err(GgufError::NotGguf(_))
        ));
        assert!(matches!(check_bytes(b""), Err(GgufError::NotGguf(_))));
    }

    #[test]
    fn rejects_unknown_version() {
        assert!(matches!(
            check_bytes(&header(1, 0, 0)),
            Err(GgufError::Version { version: 1, .. })
        ));
        assert!(matches!(
            check_bytes(&header(99, 0, 0)),
            Err(GgufError::Version { version: 99, .. })
        ));
    }

    #[test]
    fn rejects_hostile_counts_without_allocating() {
        assert!(matches!(
            check_bytes(&header(3, u64::MAX, 0)),
            Err(GgufError::Corrupt { .. })
        ));
        assert!(matches!(
            check_bytes(&header(3, 0, u64::MAX)),
            Err(GgufError::Corrupt { .. })
        ));
        // One metadata entry whose key claims 2^60 bytes.
        let mut b = header(3, 0, 1);
        b.extend((1u64 << 60).to_le_bytes());
        assert!(matches!(check_bytes(&b), Err(GgufError::Corrupt { .. })));
        // An array of u64::MAX strings.
        let mut b = header(3, 0, 1);
        b.extend(1u64.to_le_bytes());
        b.push(b'k');
        b.extend(9u32.to_le_bytes());
        b.extend(8u32.to_le_bytes());
        b.extend(u64::MAX.to_le_bytes());
        assert!(matches!(check_bytes(&b), Err(GgufError::Corrupt { .. })));
    }

    #[test]
    fn accepts_empty_model() {
        let s = check_bytes(&header(3, 0, 0)).expect("valid");
        assert_eq!((s.version, s.tensors, s.metadata), (3, 0, 0));
    }
}
