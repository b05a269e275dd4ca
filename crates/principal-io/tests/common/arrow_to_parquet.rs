//! Parquet files of Arrow record batches for the tests, written with the `parquet` crate's own
//! column writers (its `arrow` feature is off in this workspace, so `ArrowWriter` is not
//! there). The files are laid out as Arrow writers lay them out: every column optional, lists
//! as three-level LIST groups (`list` / `element`), integers with their width and sign, f16 as
//! two-byte FLOAT16, text as UTF-8 strings, dictionary encoding on, and the Arrow schema stored
//! in the footer under `ARROW:schema` (which says a list has a fixed size).
//!
//! Included by principal-io's unit tests (`src/test_util.rs`), its integration tests and the
//! CLI's, by path.

use std::io::Write;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, GenericListArray, OffsetSizeTrait, RecordBatch};
use arrow_schema::DataType;
use base64::Engine;
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DoubleType, FixedLenByteArray, FixedLenByteArrayType,
    FloatType, Int32Type as PqInt32, Int64Type as PqInt64,
};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

/// `batch` as a Parquet file in `out`, in row groups of at most `row_group_rows` rows,
/// compressed with `codec`.
pub fn write_parquet<W: Write + Send>(
    batch: &RecordBatch,
    out: W,
    row_group_rows: usize,
    codec: Compression,
) -> W {
    let schema = batch.schema();
    let fields: Vec<Arc<Type>> = schema
        .fields()
        .iter()
        .map(|f| Arc::new(parquet_field(f.name(), f.data_type())))
        .collect();
    let root = Type::group_type_builder("arrow_schema")
        .with_fields(fields)
        .build()
        .unwrap();
    let props = WriterProperties::builder()
        .set_compression(codec)
        .set_key_value_metadata(Some(vec![KeyValue::new(
            "ARROW:schema".into(),
            stored_arrow_schema(&schema),
        )]))
        .build();
    let mut writer = SerializedFileWriter::new(out, Arc::new(root), Arc::new(props)).unwrap();
    let n = batch.num_rows();
    let mut start = 0;
    while start < n {
        let rows = row_group_rows.min(n - start);
        let part = batch.slice(start, rows);
        let mut group = writer.next_row_group().unwrap();
        for column in part.columns() {
            let mut w = group.next_column().unwrap().unwrap();
            let (leaf, def, rep) = levels(column.as_ref());
            let rep = rep.as_deref();
            match leaf {
                Leaf::Bool(v) => w.typed::<BoolType>().write_batch(&v, Some(&def), rep),
                Leaf::I32(v) => w.typed::<PqInt32>().write_batch(&v, Some(&def), rep),
                Leaf::I64(v) => w.typed::<PqInt64>().write_batch(&v, Some(&def), rep),
                Leaf::F32(v) => w.typed::<FloatType>().write_batch(&v, Some(&def), rep),
                Leaf::F64(v) => w.typed::<DoubleType>().write_batch(&v, Some(&def), rep),
                Leaf::Bytes(v) => w.typed::<ByteArrayType>().write_batch(&v, Some(&def), rep),
                Leaf::Fixed(v) => {
                    w.typed::<FixedLenByteArrayType>()
                        .write_batch(&v, Some(&def), rep)
                }
            }
            .unwrap();
            w.close().unwrap();
        }
        group.close().unwrap();
        start += rows;
    }
    writer.into_inner().unwrap()
}

/// The Arrow schema as Arrow writers store it: an IPC schema message (with its continuation
/// marker and length), in base64.
fn stored_arrow_schema(schema: &arrow_schema::Schema) -> String {
    use arrow_ipc::writer::{DictionaryTracker, IpcDataGenerator, IpcWriteOptions};
    let encoded = IpcDataGenerator::default().schema_to_bytes_with_dictionary_tracker(
        schema,
        &mut DictionaryTracker::new(true),
        &IpcWriteOptions::default(),
    );
    let mut bytes = vec![0xff; 4];
    bytes.extend_from_slice(&(encoded.ipc_message.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&encoded.ipc_message);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The Parquet field of an Arrow column: optional; a list a three-level LIST group.
fn parquet_field(name: &str, t: &DataType) -> Type {
    match t {
        DataType::List(child) | DataType::LargeList(child) | DataType::FixedSizeList(child, _) => {
            let element = parquet_field("element", child.data_type());
            let list = Type::group_type_builder("list")
                .with_repetition(Repetition::REPEATED)
                .with_fields(vec![Arc::new(element)])
                .build()
                .unwrap();
            Type::group_type_builder(name)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(Some(LogicalType::List))
                .with_fields(vec![Arc::new(list)])
                .build()
                .unwrap()
        }
        t => {
            let int = |bits: i8, signed: bool| {
                Some(LogicalType::Integer {
                    bit_width: bits,
                    is_signed: signed,
                })
            };
            let (physical, logical, length) = match t {
                DataType::Boolean => (Physical::BOOLEAN, None, -1),
                DataType::Int8 => (Physical::INT32, int(8, true), -1),
                DataType::Int16 => (Physical::INT32, int(16, true), -1),
                DataType::Int32 => (Physical::INT32, None, -1),
                DataType::Int64 => (Physical::INT64, None, -1),
                DataType::UInt8 => (Physical::INT32, int(8, false), -1),
                DataType::UInt16 => (Physical::INT32, int(16, false), -1),
                DataType::UInt32 => (Physical::INT32, int(32, false), -1),
                DataType::UInt64 => (Physical::INT64, int(64, false), -1),
                DataType::Float16 => (
                    Physical::FIXED_LEN_BYTE_ARRAY,
                    Some(LogicalType::Float16),
                    2,
                ),
                DataType::Float32 => (Physical::FLOAT, None, -1),
                DataType::Float64 => (Physical::DOUBLE, None, -1),
                DataType::Utf8 => (Physical::BYTE_ARRAY, Some(LogicalType::String), -1),
                other => panic!("no Parquet test writer for {other}"),
            };
            Type::primitive_type_builder(name, physical)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(logical)
                .with_length(length)
                .build()
                .unwrap()
        }
    }
}

/// A leaf column's values (nulls left out).
enum Leaf {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bytes(Vec<ByteArray>),
    Fixed(Vec<FixedLenByteArray>),
}

/// The values of `a` at `at` (its slots, nulls skipped).
fn leaf_values(a: &dyn Array, at: &[usize]) -> Leaf {
    macro_rules! prim {
        ($variant:ident, $t:ty, $conv:expr) => {{
            let p = a.as_primitive::<$t>();
            Leaf::$variant(at.iter().map(|&i| $conv(p.value(i))).collect())
        }};
    }
    match a.data_type() {
        DataType::Boolean => {
            let b = a.as_boolean();
            Leaf::Bool(at.iter().map(|&i| b.value(i)).collect())
        }
        DataType::Int8 => prim!(I32, Int8Type, i32::from),
        DataType::Int16 => prim!(I32, Int16Type, i32::from),
        DataType::Int32 => prim!(I32, Int32Type, |v| v),
        DataType::Int64 => prim!(I64, Int64Type, |v| v),
        DataType::UInt8 => prim!(I32, UInt8Type, i32::from),
        DataType::UInt16 => prim!(I32, UInt16Type, i32::from),
        DataType::UInt32 => prim!(I32, UInt32Type, |v: u32| v as i32),
        DataType::UInt64 => prim!(I64, UInt64Type, |v: u64| v as i64),
        DataType::Float16 => prim!(Fixed, Float16Type, |v: half::f16| {
            FixedLenByteArray::from(v.to_le_bytes().to_vec())
        }),
        DataType::Float32 => prim!(F32, Float32Type, |v| v),
        DataType::Float64 => prim!(F64, Float64Type, |v| v),
        DataType::Utf8 => {
            let s = a.as_string::<i32>();
            Leaf::Bytes(at.iter().map(|&i| ByteArray::from(s.value(i))).collect())
        }
        other => panic!("no Parquet test writer for {other}"),
    }
}

/// Where a row's list lies in its list array's values (start, length); `None` when null.
type ListRange = Option<(usize, usize)>;

/// Each row's (start, length) in a variable-size list's values (`None`: a null list), and
/// the values.
fn list_rows<O: OffsetSizeTrait>(l: &GenericListArray<O>) -> (Vec<ListRange>, &dyn Array) {
    let o = l.value_offsets();
    let rows = (0..l.len())
        .map(|i| (!l.is_null(i)).then(|| (o[i].as_usize(), (o[i + 1] - o[i]).as_usize())))
        .collect();
    (rows, l.values().as_ref())
}

/// A column's leaf values and definition levels, and for a list its repetition levels.
fn levels(a: &dyn Array) -> (Leaf, Vec<i16>, Option<Vec<i16>>) {
    let ranges: Option<(Vec<ListRange>, &dyn Array)> = match a.data_type() {
        DataType::FixedSizeList(_, n) => {
            let l = a.as_fixed_size_list();
            let n = *n as usize;
            let rows = (0..l.len())
                .map(|i| (!l.is_null(i)).then(|| (l.value_offset(i) as usize, n)))
                .collect();
            Some((rows, l.values().as_ref()))
        }
        DataType::List(_) => Some(list_rows(a.as_list::<i32>())),
        DataType::LargeList(_) => Some(list_rows(a.as_list::<i64>())),
        _ => None,
    };
    match ranges {
        None => {
            let at: Vec<usize> = (0..a.len()).filter(|&i| !a.is_null(i)).collect();
            let def = (0..a.len()).map(|i| i16::from(!a.is_null(i))).collect();
            (leaf_values(a, &at), def, None)
        }
        Some((rows, values)) => {
            let (mut def, mut rep, mut at) = (Vec::new(), Vec::new(), Vec::new());
            for row in rows {
                match row {
                    None => {
                        def.push(0);
                        rep.push(0);
                    }
                    Some((_, 0)) => {
                        def.push(1);
                        rep.push(0);
                    }
                    Some((start, len)) => {
                        for k in 0..len {
                            let i = start + k;
                            rep.push(i16::from(k > 0));
                            if values.is_null(i) {
                                def.push(2);
                            } else {
                                def.push(3);
                                at.push(i);
                            }
                        }
                    }
                }
            }
            (leaf_values(values, &at), def, Some(rep))
        }
    }
}
