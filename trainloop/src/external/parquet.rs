//! The training set as Parquet in verl's layout: one row per sample with `data_source`,
//! `prompt`, `response`, their token ids, the recorded log-probabilities, `advantage`,
//! `reward`, `images` (paths relative to the file) and where the sample came from.
//!
//! Written with the `parquet` crate's column writer (no Arrow, no codecs: the file is
//! uncompressed), and read back by the same crate's record reader ([`read`]).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DoubleType, FloatType, Int32Type, Int64Type,
};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::{Field, List, Row};
use parquet::schema::parser::parse_message_type;

use super::dataset::Record;

/// The file's schema. Lists use Parquet's standard three-level LIST form, which pyarrow,
/// pandas and `datasets` read as lists.
const SCHEMA: &str = "
message surfgym_training_set {
  required binary data_source (STRING);
  required binary prompt (STRING);
  required binary response (STRING);
  required group prompt_ids (LIST) { repeated group list { required int32 element; } }
  required group response_ids (LIST) { repeated group list { required int32 element; } }
  required group old_log_probs (LIST) { repeated group list { required float element; } }
  required float advantage;
  required double reward;
  required group images (LIST) { repeated group list { required binary element (STRING); } }
  required binary ability (STRING);
  required int64 index;
  required binary episode (STRING);
  required int32 step;
  required binary task (STRING);
  required boolean masked;
  required group old_log_probs_unmasked (LIST) { repeated group list { required float element; } }
}";

/// What verl's `ability` column says of every row.
const ABILITY: &str = "web-agent";

/// Writes `records` to `path` as one row group.
pub fn write(path: &Path, records: &[Record]) -> Result<(), String> {
    let schema = Arc::new(parse_message_type(SCHEMA).map_err(|e| e.to_string())?);
    let props = Arc::new(WriterProperties::builder().build());
    let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut writer = SerializedFileWriter::new(file, schema, props).map_err(|e| e.to_string())?;
    let mut group = writer.next_row_group().map_err(|e| e.to_string())?;
    let text = |f: &dyn Fn(&Record) -> String| -> Vec<ByteArray> {
        records
            .iter()
            .map(|r| ByteArray::from(f(r).as_str()))
            .collect()
    };
    let mut column = 0;
    while let Some(mut col) = group.next_column().map_err(|e| e.to_string())? {
        let done = match column {
            0 => col.typed::<ByteArrayType>().write_batch(
                &text(&|r| format!("surfgym/{}", r.site)),
                None,
                None,
            ),
            1 => col
                .typed::<ByteArrayType>()
                .write_batch(&text(&|r| r.prompt.clone()), None, None),
            2 => col.typed::<ByteArrayType>().write_batch(
                &text(&|r| r.completion.clone()),
                None,
                None,
            ),
            3 => {
                let (v, d, p) = list(records, |r| ids(&r.prompt_ids));
                col.typed::<Int32Type>().write_batch(&v, Some(&d), Some(&p))
            }
            4 => {
                let (v, d, p) = list(records, |r| ids(&r.completion_ids));
                col.typed::<Int32Type>().write_batch(&v, Some(&d), Some(&p))
            }
            5 => {
                let (v, d, p) = list(records, |r| r.old_logprobs.clone());
                col.typed::<FloatType>().write_batch(&v, Some(&d), Some(&p))
            }
            6 => {
                let v: Vec<f32> = records.iter().map(|r| r.advantage).collect();
                col.typed::<FloatType>().write_batch(&v, None, None)
            }
            7 => {
                let v: Vec<f64> = records.iter().map(|r| r.reward).collect();
                col.typed::<DoubleType>().write_batch(&v, None, None)
            }
            8 => {
                let (v, d, p) = list(records, |r| {
                    r.images
                        .iter()
                        .map(|i| ByteArray::from(i.as_str()))
                        .collect()
                });
                col.typed::<ByteArrayType>()
                    .write_batch(&v, Some(&d), Some(&p))
            }
            9 => col
                .typed::<ByteArrayType>()
                .write_batch(&text(&|_| ABILITY.into()), None, None),
            10 => {
                let v: Vec<i64> = (0..records.len() as i64).collect();
                col.typed::<Int64Type>().write_batch(&v, None, None)
            }
            11 => {
                col.typed::<ByteArrayType>()
                    .write_batch(&text(&|r| r.episode.clone()), None, None)
            }
            12 => {
                let v: Vec<i32> = records.iter().map(|r| r.step as i32).collect();
                col.typed::<Int32Type>().write_batch(&v, None, None)
            }
            13 => col
                .typed::<ByteArrayType>()
                .write_batch(&text(&|r| r.task.clone()), None, None),
            14 => {
                let v: Vec<bool> = records.iter().map(|r| r.masked).collect();
                col.typed::<BoolType>().write_batch(&v, None, None)
            }
            15 => {
                let (v, d, p) = list(records, |r| r.old_logprobs_unmasked.clone());
                col.typed::<FloatType>().write_batch(&v, Some(&d), Some(&p))
            }
            n => {
                return Err(format!(
                    "the schema has a column {n} this writer does not fill"
                ));
            }
        };
        done.map_err(|e| e.to_string())?;
        col.close().map_err(|e| e.to_string())?;
        column += 1;
    }
    group.close().map_err(|e| e.to_string())?;
    writer.close().map_err(|e| e.to_string())?;
    Ok(())
}

fn ids(v: &[u32]) -> Vec<i32> {
    // Vocabularies are far below 2^31; a larger id would be a corrupt record.
    v.iter().map(|&i| i32::try_from(i).unwrap_or(-1)).collect()
}

/// A list column's values with their definition and repetition levels: an empty list is
/// one level-0 entry, each element defined at level 1, repeated after the row's first.
fn list<T>(records: &[Record], f: impl Fn(&Record) -> Vec<T>) -> (Vec<T>, Vec<i16>, Vec<i16>) {
    let (mut values, mut def, mut rep) = (Vec::new(), Vec::new(), Vec::new());
    for r in records {
        let items = f(r);
        if items.is_empty() {
            def.push(0);
            rep.push(0);
        }
        for (k, item) in items.into_iter().enumerate() {
            values.push(item);
            def.push(1);
            rep.push(i16::from(k > 0));
        }
    }
    (values, def, rep)
}

/// One row read back.
#[derive(Debug, Clone, PartialEq)]
pub struct ParquetRow {
    /// `data_source`.
    pub data_source: String,
    /// `prompt`.
    pub prompt: String,
    /// `response`.
    pub response: String,
    /// `prompt_ids`.
    pub prompt_ids: Vec<i32>,
    /// `response_ids`.
    pub response_ids: Vec<i32>,
    /// `old_log_probs`.
    pub old_log_probs: Vec<f32>,
    /// `masked`.
    pub masked: bool,
    /// `old_log_probs_unmasked`.
    pub old_log_probs_unmasked: Vec<f32>,
    /// `advantage`.
    pub advantage: f32,
    /// `reward`.
    pub reward: f64,
    /// `images`.
    pub images: Vec<String>,
    /// `episode`.
    pub episode: String,
    /// `step`.
    pub step: i32,
    /// `task`.
    pub task: String,
}

/// Reads a training set's Parquet file back (what tests and tools check it with).
pub fn read(path: &Path) -> Result<Vec<ParquetRow>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reader = SerializedFileReader::new(file).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for row in reader.get_row_iter(None).map_err(|e| e.to_string())? {
        out.push(parse_row(&row.map_err(|e| e.to_string())?)?);
    }
    Ok(out)
}

fn parse_row(row: &Row) -> Result<ParquetRow, String> {
    let mut r = ParquetRow {
        data_source: String::new(),
        prompt: String::new(),
        response: String::new(),
        prompt_ids: Vec::new(),
        response_ids: Vec::new(),
        old_log_probs: Vec::new(),
        masked: false,
        old_log_probs_unmasked: Vec::new(),
        advantage: 0.0,
        reward: 0.0,
        images: Vec::new(),
        episode: String::new(),
        step: 0,
        task: String::new(),
    };
    for (name, field) in row.get_column_iter() {
        match (name.as_str(), field) {
            ("data_source", Field::Str(s)) => r.data_source = s.clone(),
            ("prompt", Field::Str(s)) => r.prompt = s.clone(),
            ("response", Field::Str(s)) => r.response = s.clone(),
            ("episode", Field::Str(s)) => r.episode = s.clone(),
            ("task", Field::Str(s)) => r.task = s.clone(),
            ("prompt_ids", Field::ListInternal(l)) => r.prompt_ids = ints(l)?,
            ("response_ids", Field::ListInternal(l)) => r.response_ids = ints(l)?,
            ("old_log_probs", Field::ListInternal(l)) => {
                r.old_log_probs = floats("old_log_probs", l)?
            }
            ("old_log_probs_unmasked", Field::ListInternal(l)) => {
                r.old_log_probs_unmasked = floats("old_log_probs_unmasked", l)?
            }
            ("masked", Field::Bool(b)) => r.masked = *b,
            ("images", Field::ListInternal(l)) => {
                r.images = l
                    .elements()
                    .iter()
                    .map(|f| match f {
                        Field::Str(s) => Ok(s.clone()),
                        other => Err(format!("images: {other:?} is not a string")),
                    })
                    .collect::<Result<_, _>>()?
            }
            ("advantage", Field::Float(x)) => r.advantage = *x,
            ("reward", Field::Double(x)) => r.reward = *x,
            ("step", Field::Int(x)) => r.step = *x,
            ("ability" | "index", _) => {}
            (name, other) => return Err(format!("column {name}: unexpected {other:?}")),
        }
    }
    Ok(r)
}

fn floats(column: &str, l: &List) -> Result<Vec<f32>, String> {
    l.elements()
        .iter()
        .map(|f| match f {
            Field::Float(x) => Ok(*x),
            other => Err(format!("{column}: {other:?} is not a float")),
        })
        .collect()
}

fn ints(l: &List) -> Result<Vec<i32>, String> {
    l.elements()
        .iter()
        .map(|f| match f {
            Field::Int(x) => Ok(*x),
            other => Err(format!("{other:?} is not an int32")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(k: usize, images: Vec<String>) -> Record {
        Record {
            episode: format!("e{k}"),
            step: k,
            task: "miniwob.click-test".into(),
            site: "miniwob".into(),
            group: "c/t".into(),
            prompt: format!("<|user|>click <image> {k}"),
            placeholder: "<image>".into(),
            completion: "click(3)".into(),
            prompt_ids: (0..k as u32 + 3).collect(),
            completion_ids: vec![7, 8, 9000 + k as u32],
            old_logprobs: vec![-0.5, -1.25, -0.125],
            masked: k % 2 == 1,
            old_logprobs_unmasked: if k % 2 == 1 {
                vec![-0.75, -1.5, -0.25]
            } else {
                Vec::new()
            },
            advantage: k as f32 - 0.5,
            reward: (k % 2) as f64,
            images,
        }
    }

    #[test]
    fn what_is_written_reads_back_with_the_crates_reader() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("train.parquet");
        let records = vec![
            record(0, vec![]),
            record(1, vec!["images/a.png".into(), "images/b.png".into()]),
            record(2, vec!["images/c.png".into()]),
        ];
        write(&path, &records).unwrap();
        let rows = read(&path).unwrap();
        assert_eq!(rows.len(), 3);
        for (r, row) in records.iter().zip(&rows) {
            let ids = |v: &[u32]| v.iter().map(|&i| i as i32).collect::<Vec<_>>();
            assert_eq!(row.prompt_ids, ids(&r.prompt_ids));
            assert_eq!(row.response_ids, ids(&r.completion_ids));
            assert_eq!(row.old_log_probs, r.old_logprobs);
            assert_eq!(
                (row.masked, &row.old_log_probs_unmasked),
                (r.masked, &r.old_logprobs_unmasked)
            );
            assert_eq!(row.images, r.images);
            assert_eq!(
                (&row.prompt, &row.response, row.advantage, row.reward),
                (&r.prompt, &r.completion, r.advantage, r.reward)
            );
            assert_eq!(
                (row.episode.as_str(), row.step as usize),
                (r.episode.as_str(), r.step)
            );
            assert_eq!(row.data_source, "surfgym/miniwob");
        }
    }
}
