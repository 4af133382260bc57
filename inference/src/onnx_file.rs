//! Reads the initializers (weights) of an ONNX model file, inline or in external data files.
//!
//! Only the few protobuf fields that hold initializers are decoded (`ModelProto.graph`,
//! `GraphProto.initializer`, `TensorProto`'s dims, type, name, data and external-data
//! location); everything else is skipped by its wire type, so graphs of any size or opset
//! read the same. A hand-written reader instead of generated protobuf code: these six fields
//! are all the trainer needs, and they have been stable since ONNX's first release.

use std::path::{Path, PathBuf};

/// An initializer's element type (the ONNX `TensorProto.DataType` values the trainer meets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataType {
    /// 32-bit float (1).
    F32,
    /// 16-bit float (10).
    F16,
    /// bfloat16 (16).
    Bf16,
    /// 64-bit integer (7).
    I64,
    /// 32-bit integer (6).
    I32,
    /// Any other type, by its ONNX number.
    Other(i32),
}

impl DataType {
    fn from_onnx(v: i32) -> Self {
        match v {
            1 => Self::F32,
            10 => Self::F16,
            16 => Self::Bf16,
            7 => Self::I64,
            6 => Self::I32,
            v => Self::Other(v),
        }
    }

    /// Bytes per element, where fixed.
    pub fn size(self) -> Option<usize> {
        match self {
            Self::F32 | Self::I32 => Some(4),
            Self::F16 | Self::Bf16 => Some(2),
            Self::I64 => Some(8),
            Self::Other(_) => None,
        }
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::F32 => f.write_str("f32"),
            Self::F16 => f.write_str("f16"),
            Self::Bf16 => f.write_str("bf16"),
            Self::I64 => f.write_str("i64"),
            Self::I32 => f.write_str("i32"),
            Self::Other(v) => write!(f, "onnx type {v}"),
        }
    }
}

/// One initializer: its ONNX name, shape, type and little-endian bytes.
#[derive(Debug, Clone)]
pub struct Initializer {
    /// The name the graph's nodes use (and `SessionBuilder::with_initializer` replaces).
    pub name: String,
    /// Dimensions, outermost first.
    pub dims: Vec<usize>,
    /// Element type.
    pub dtype: DataType,
    /// The elements, little-endian, row-major.
    pub data: Vec<u8>,
}

impl Initializer {
    /// The elements as `f32`, for an `F32` initializer.
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        (self.dtype == DataType::F32).then(|| {
            self.data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        })
    }
}

/// Why a model file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OnnxFileError {
    /// The file (or an external data file) could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The bytes are not a well-formed ONNX model.
    #[error("{path} is not a readable ONNX model: {why}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        why: String,
    },
}

/// Reads every initializer of the model at `path` (external data is resolved next to it).
pub fn read_initializers(path: &Path) -> Result<Vec<Initializer>, OnnxFileError> {
    let bytes = std::fs::read(path).map_err(|source| OnnxFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |why: String| OnnxFileError::Malformed {
        path: path.to_path_buf(),
        why,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    let mut model = Reader::new(&bytes);
    while let Some((field, value)) = model.next().map_err(&bad)? {
        if let (7, Value::Bytes(graph)) = (field, value) {
            let mut graph = Reader::new(graph);
            while let Some((field, value)) = graph.next().map_err(&bad)? {
                if let (5, Value::Bytes(tensor)) = (field, value) {
                    out.push(tensor_proto(tensor, dir).map_err(&bad)?);
                }
            }
        }
    }
    Ok(out)
}

fn tensor_proto(bytes: &[u8], dir: &Path) -> Result<Initializer, String> {
    let mut dims = Vec::new();
    let mut dtype = 0i32;
    let mut name = String::new();
    let mut raw: Option<Vec<u8>> = None;
    let mut floats: Vec<u8> = Vec::new();
    let mut int64s: Vec<u8> = Vec::new();
    let mut external: Vec<(String, String)> = Vec::new();
    let mut location = 0u64;
    let mut r = Reader::new(bytes);
    while let Some((field, value)) = r.next()? {
        match (field, value) {
            (1, Value::Varint(d)) => dims.push(d as usize),
            (1, Value::Bytes(packed)) => {
                let mut p = Reader::new(packed);
                while !p.done() {
                    dims.push(p.varint()? as usize);
                }
            }
            (2, Value::Varint(t)) => dtype = t as i32,
            (4, Value::Fixed32(f)) => floats.extend_from_slice(&f.to_le_bytes()),
            (4, Value::Bytes(packed)) => floats.extend_from_slice(packed),
            (7, Value::Varint(v)) => int64s.extend_from_slice(&(v as i64).to_le_bytes()),
            (7, Value::Bytes(packed)) => {
                let mut p = Reader::new(packed);
                while !p.done() {
                    int64s.extend_from_slice(&(p.varint()? as i64).to_le_bytes());
                }
            }
            (8, Value::Bytes(n)) => {
                name = String::from_utf8(n.to_vec()).map_err(|_| "a tensor name is not UTF-8")?
            }
            (9, Value::Bytes(d)) => raw = Some(d.to_vec()),
            (13, Value::Bytes(entry)) => {
                let (mut k, mut v) = (String::new(), String::new());
                let mut e = Reader::new(entry);
                while let Some((f, val)) = e.next()? {
                    if let Value::Bytes(s) = val {
                        let s = String::from_utf8_lossy(s).into_owned();
                        match f {
                            1 => k = s,
                            2 => v = s,
                            _ => {}
                        }
                    }
                }
                external.push((k, v));
            }
            (14, Value::Varint(l)) => location = l,
            _ => {}
        }
    }
    let dtype = DataType::from_onnx(dtype);
    let data = if location == 1 {
        external_data(&external, dir).map_err(|e| format!("tensor {name}: {e}"))?
    } else if let Some(raw) = raw {
        raw
    } else if !floats.is_empty() {
        floats
    } else {
        int64s
    };
    let count: usize = dims.iter().product();
    if let Some(size) = dtype.size()
        && data.len() != count * size
    {
        return Err(format!(
            "tensor {name}: {} bytes for shape {dims:?} of {dtype}",
            data.len()
        ));
    }
    Ok(Initializer {
        name,
        dims,
        dtype,
        data,
    })
}

fn external_data(entries: &[(String, String)], dir: &Path) -> Result<Vec<u8>, String> {
    use std::io::{Read, Seek, SeekFrom};
    let get = |k: &str| entries.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let location = get("location").ok_or("external data without a location")?;
    // The location is relative to the model's folder and may not leave it.
    if Path::new(location).is_absolute() || location.split(['/', '\\']).any(|c| c == "..") {
        return Err(format!(
            "external data location {location:?} leaves the model's folder"
        ));
    }
    let path = dir.join(location);
    let offset: u64 = get("offset")
        .map_or(Ok(0), |o| o.parse())
        .map_err(|_| "bad offset")?;
    let mut file =
        std::fs::File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut data = Vec::new();
    match get("length") {
        Some(len) => {
            let len: u64 = len.parse().map_err(|_| "bad length")?;
            file.take(len).read_to_end(&mut data)
        }
        None => file.read_to_end(&mut data),
    }
    .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(data)
}

enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32(f32),
}

/// A protobuf wire-format reader over one message's bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or("truncated varint")?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).ok_or("length overflow")?;
        let s = self.buf.get(self.pos..end).ok_or("truncated field")?;
        self.pos = end;
        Ok(s)
    }

    fn next(&mut self) -> Result<Option<(u64, Value<'a>)>, String> {
        if self.done() {
            return Ok(None);
        }
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Value::Fixed64
            }
            2 => {
                let n = self.varint()? as usize;
                Value::Bytes(self.take(n)?)
            }
            5 => {
                let b = self.take(4)?;
                Value::Fixed32(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            w => return Err(format!("unsupported wire type {w}")),
        };
        Ok(Some((key >> 3, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn field(n: u64, bytes: &[u8], out: &mut Vec<u8>) {
        varint(n << 3 | 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    #[test]
    fn reads_inline_and_external_initializers_and_rejects_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let ext: Vec<u8> = [9.0f32, 8.0, 7.0, 6.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let mut padded = vec![0u8; 8];
        padded.extend_from_slice(&ext);
        std::fs::write(dir.path().join("w.bin"), &padded).unwrap();

        let mut inline = Vec::new();
        varint(1 << 3, &mut inline);
        varint(2, &mut inline); // dims 2
        field(8, b"a", &mut inline);
        varint(2 << 3, &mut inline);
        varint(1, &mut inline); // f32
        field(
            9,
            &[1.5f32, -2.0]
                .iter()
                .flat_map(|f| f.to_le_bytes())
                .collect::<Vec<_>>(),
            &mut inline,
        );
        let mut external = Vec::new();
        field(1, &[2, 2], &mut external); // packed dims 2x2
        varint(2 << 3, &mut external);
        varint(1, &mut external);
        field(8, b"b", &mut external);
        for (k, v) in [("location", "w.bin"), ("offset", "8"), ("length", "16")] {
            let mut e = Vec::new();
            field(1, k.as_bytes(), &mut e);
            field(2, v.as_bytes(), &mut e);
            field(13, &e, &mut external);
        }
        varint(14 << 3, &mut external);
        varint(1, &mut external);
        let mut graph = Vec::new();
        field(5, &inline, &mut graph);
        field(5, &external, &mut graph);
        let mut model = Vec::new();
        varint(1 << 3, &mut model);
        varint(8, &mut model); // ir_version, skipped
        field(7, &graph, &mut model);
        let path = dir.path().join("m.onnx");
        std::fs::write(&path, &model).unwrap();

        let inits = read_initializers(&path).unwrap();
        assert_eq!(inits.len(), 2);
        assert_eq!(inits[0].name, "a");
        assert_eq!(inits[0].to_f32().unwrap(), vec![1.5, -2.0]);
        assert_eq!(inits[1].name, "b");
        assert_eq!(inits[1].dims, vec![2, 2]);
        assert_eq!(inits[1].to_f32().unwrap(), vec![9.0, 8.0, 7.0, 6.0]);

        std::fs::write(&path, &model[..model.len() - 3]).unwrap();
        let err = read_initializers(&path).unwrap_err().to_string();
        assert!(err.contains("not a readable ONNX model"), "{err}");
    }
}
