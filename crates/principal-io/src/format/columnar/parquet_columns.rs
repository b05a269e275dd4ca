//! Parquet's columns as Arrow types and arrays, through the `parquet` crate's own column
//! readers (not its `arrow` layer, whose casting kernels were the largest unit of the build):
//! - [`arrow_schema`] gives every top-level column the Arrow type the shared code selects by
//!   (the rules of the Arrow conversion of the Parquet format, refined by the Arrow schema that
//!   Arrow writers store in the footer: a list's fixed size, a non-numeric column's exact type);
//! - [`ReadColumn`] decodes a numeric column, or a list of numbers (one level of repetition),
//!   with its definition and repetition levels: a null becomes an Arrow null, which the shared
//!   code reads as a missing value or refuses.

use std::sync::Arc;

use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{ArrayRef, ArrowPrimitiveType, ListArray, PrimitiveArray};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};
use base64::Engine;
use half::f16;
use parquet::basic::{ConvertedType, LogicalType, Repetition, Type as Physical};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::DataType as ParquetType;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::FileMetaData;
use parquet::file::reader::RowGroupReader;
use parquet::schema::types::{SchemaDescriptor, Type};

/// The footer key under which Arrow writers (arrow-rs, pyarrow) store the Arrow schema.
const ARROW_SCHEMA_KEY: &str = "ARROW:schema";

/// The Arrow schema of the file's top-level columns.
///
/// A numeric column's type comes from the Parquet schema (it decides how the values are
/// decoded); the Arrow schema stored by an Arrow writer, when it has the same columns, gives a
/// list its fixed size (`FixedSizeList`, whose width is then known before the first row) and a
/// non-numeric column its exact type for messages (`Dictionary`, `Duration`, `LargeUtf8`).
pub(crate) fn arrow_schema(meta: &FileMetaData) -> Schema {
    let roots = meta.schema_descr().root_schema().get_fields();
    let stored = stored_arrow_schema(meta)
        .filter(|s| s.fields().len() == roots.len())
        .filter(|s| {
            s.fields()
                .iter()
                .zip(roots)
                .all(|(f, r)| f.name() == r.name())
        });
    let fields: Vec<Field> = roots
        .iter()
        .enumerate()
        .map(|(i, root)| {
            let derived = arrow_type(root);
            let t = match stored.as_ref().map(|s| s.field(i).data_type()) {
                None => derived,
                Some(hint) => refine(derived, hint),
            };
            Field::new(root.name(), t, true)
        })
        .collect();
    Schema::new(fields)
}

/// The Arrow schema stored in the footer, if any can be decoded.
fn stored_arrow_schema(meta: &FileMetaData) -> Option<Schema> {
    let value = meta
        .key_value_metadata()?
        .iter()
        .find(|kv| kv.key == ARROW_SCHEMA_KEY)?
        .value
        .as_ref()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value)
        .ok()?;
    arrow_ipc::convert::try_schema_from_ipc_buffer(&bytes).ok()
}

fn is_numeric(t: &DataType) -> bool {
    t.is_integer() || t.is_floating()
}

/// The type of a column derived from the Parquet schema, refined by the stored Arrow type.
fn refine(derived: DataType, hint: &DataType) -> DataType {
    match (&derived, hint) {
        // How the values are decoded is the Parquet schema's to say.
        (d, h) if is_numeric(d) && is_numeric(h) => derived,
        (DataType::List(child), DataType::FixedSizeList(_, n)) if is_numeric(child.data_type()) => {
            DataType::FixedSizeList(child.clone(), *n)
        }
        (DataType::List(_), DataType::List(_) | DataType::LargeList(_)) => derived,
        _ if is_numeric(&derived) => derived,
        // A non-numeric column is never decoded: its stored type names it in messages.
        _ => hint.clone(),
    }
}

/// The Arrow type of a Parquet column, as the Arrow conversion of the format gives it.
fn arrow_type(t: &Type) -> DataType {
    // A repeated field outside a LIST group is a list of itself.
    if is_repeated(t) {
        list_of(value_type(t))
    } else {
        value_type(t)
    }
}

fn is_repeated(t: &Type) -> bool {
    let info = t.get_basic_info();
    info.has_repetition() && info.repetition() == Repetition::REPEATED
}

/// The Arrow type of one value of a Parquet field (its repetition aside).
fn value_type(t: &Type) -> DataType {
    let info = t.get_basic_info();
    if t.is_primitive() {
        primitive_type(t)
    } else if is_list(t) {
        match list_element(t) {
            // Two levels: the repeated field is the element.
            Some(element) if is_repeated(element) => list_of(value_type(element)),
            Some(element) => list_of(arrow_type(element)),
            None => DataType::Null,
        }
    } else if matches!(info.logical_type(), Some(LogicalType::Map))
        || matches!(
            info.converted_type(),
            ConvertedType::MAP | ConvertedType::MAP_KEY_VALUE
        )
    {
        DataType::Map(Arc::new(Field::new("entries", struct_of(t), false)), false)
    } else {
        struct_of(t)
    }
}

fn list_of(t: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", t, true)))
}

fn struct_of(t: &Type) -> DataType {
    let fields: Fields = t
        .get_fields()
        .iter()
        .map(|f| Field::new(f.name(), arrow_type(f), true))
        .collect();
    DataType::Struct(fields)
}

fn is_list(t: &Type) -> bool {
    let info = t.get_basic_info();
    t.is_group()
        && t.get_fields().len() == 1
        && (matches!(info.logical_type(), Some(LogicalType::List))
            || info.converted_type() == ConvertedType::LIST)
}

/// The element of a LIST group: the repeated field's only child (three levels), or the
/// repeated field itself (the older two-level lists, and lists of structs).
fn list_element(list: &Type) -> Option<&Type> {
    let repeated = list.get_fields().first()?;
    if repeated.is_primitive()
        || repeated.get_fields().len() != 1
        || repeated.name() == "array"
        || repeated.name() == format!("{}_tuple", list.name())
    {
        // The repeated field is the element: strip its repetition.
        return Some(repeated.as_ref());
    }
    repeated.get_fields().first().map(|f| f.as_ref())
}

fn primitive_type(t: &Type) -> DataType {
    let info = t.get_basic_info();
    let type_length = match t {
        Type::PrimitiveType { type_length, .. } => *type_length,
        Type::GroupType { .. } => 0,
    };
    let logical = info.logical_type();
    let converted = info.converted_type();
    match t.get_physical_type() {
        Physical::BOOLEAN => DataType::Boolean,
        Physical::INT32 => match (logical, converted) {
            (
                Some(LogicalType::Integer {
                    bit_width,
                    is_signed,
                }),
                _,
            ) => match (bit_width, is_signed) {
                (8, true) => DataType::Int8,
                (16, true) => DataType::Int16,
                (8, false) => DataType::UInt8,
                (16, false) => DataType::UInt16,
                (32, false) => DataType::UInt32,
                _ => DataType::Int32,
            },
            (_, ConvertedType::INT_8) => DataType::Int8,
            (_, ConvertedType::INT_16) => DataType::Int16,
            (_, ConvertedType::UINT_8) => DataType::UInt8,
            (_, ConvertedType::UINT_16) => DataType::UInt16,
            (_, ConvertedType::UINT_32) => DataType::UInt32,
            (Some(LogicalType::Decimal { scale, precision }), _) => {
                DataType::Decimal128(precision as u8, scale as i8)
            }
            (Some(LogicalType::Date), _) | (_, ConvertedType::DATE) => DataType::Date32,
            (Some(LogicalType::Time { .. }), _) | (_, ConvertedType::TIME_MILLIS) => {
                DataType::Time32(TimeUnit::Millisecond)
            }
            (_, ConvertedType::DECIMAL) => {
                DataType::Decimal128(t.get_precision().clamp(0, 38) as u8, t.get_scale() as i8)
            }
            _ => DataType::Int32,
        },
        Physical::INT64 => match (logical, converted) {
            (
                Some(LogicalType::Integer {
                    is_signed: false, ..
                }),
                _,
            )
            | (_, ConvertedType::UINT_64) => DataType::UInt64,
            (Some(LogicalType::Integer { .. }), _) | (_, ConvertedType::INT_64) => DataType::Int64,
            (Some(LogicalType::Decimal { scale, precision }), _) => {
                DataType::Decimal128(precision as u8, scale as i8)
            }
            (
                Some(LogicalType::Timestamp {
                    unit,
                    is_adjusted_to_u_t_c,
                }),
                _,
            ) => DataType::Timestamp(
                time_unit(&unit),
                is_adjusted_to_u_t_c.then(|| "+00:00".into()),
            ),
            (_, ConvertedType::TIMESTAMP_MILLIS) => {
                DataType::Timestamp(TimeUnit::Millisecond, None)
            }
            (_, ConvertedType::TIMESTAMP_MICROS) => {
                DataType::Timestamp(TimeUnit::Microsecond, None)
            }
            (Some(LogicalType::Time { unit, .. }), _) => DataType::Time64(time_unit(&unit)),
            (_, ConvertedType::TIME_MICROS) => DataType::Time64(TimeUnit::Microsecond),
            _ => DataType::Int64,
        },
        Physical::INT96 => DataType::Timestamp(TimeUnit::Nanosecond, None),
        Physical::FLOAT => DataType::Float32,
        Physical::DOUBLE => DataType::Float64,
        Physical::BYTE_ARRAY => match (logical, converted) {
            (Some(LogicalType::String | LogicalType::Enum | LogicalType::Json), _)
            | (_, ConvertedType::UTF8 | ConvertedType::ENUM | ConvertedType::JSON) => {
                DataType::Utf8
            }
            (Some(LogicalType::Decimal { scale, precision }), _) => {
                DataType::Decimal128(precision as u8, scale as i8)
            }
            _ => DataType::Binary,
        },
        Physical::FIXED_LEN_BYTE_ARRAY => match logical {
            Some(LogicalType::Float16) if type_length == 2 => DataType::Float16,
            Some(LogicalType::Decimal { scale, precision }) => {
                DataType::Decimal128(precision as u8, scale as i8)
            }
            _ => DataType::FixedSizeBinary(type_length),
        },
    }
}

fn time_unit(unit: &parquet::basic::TimeUnit) -> TimeUnit {
    match unit {
        parquet::basic::TimeUnit::MILLIS(_) => TimeUnit::Millisecond,
        parquet::basic::TimeUnit::MICROS(_) => TimeUnit::Microsecond,
        parquet::basic::TimeUnit::NANOS(_) => TimeUnit::Nanosecond,
    }
}

/// The numeric Arrow types a Parquet column is decoded to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Numeric {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
}

impl Numeric {
    fn of(t: &DataType) -> Option<Numeric> {
        Some(match t {
            DataType::Int8 => Numeric::I8,
            DataType::Int16 => Numeric::I16,
            DataType::Int32 => Numeric::I32,
            DataType::Int64 => Numeric::I64,
            DataType::UInt8 => Numeric::U8,
            DataType::UInt16 => Numeric::U16,
            DataType::UInt32 => Numeric::U32,
            DataType::UInt64 => Numeric::U64,
            DataType::Float16 => Numeric::F16,
            DataType::Float32 => Numeric::F32,
            DataType::Float64 => Numeric::F64,
            _ => return None,
        })
    }
}

/// How a column's rows are laid out in its leaf's levels.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// One value (or null) per row.
    Flat,
    /// A list per row (repetition level 0 starts a row): the row's list is null below
    /// definition level `present`, empty below `element`, and an element is null below the
    /// leaf's maximum.
    List { present: i16, element: i16 },
}

/// One top-level column of the file, decoded a batch of rows at a time.
pub(crate) struct ReadColumn {
    name: String,
    /// The leaf column holding the values, and how they are decoded; `None` for a column
    /// the shared code never reads (a non-numeric one, refused at the first read).
    leaf: Option<(usize, Numeric, Shape)>,
    max_def: i16,
    /// The column's reader within the current row group.
    reader: Option<ColumnReader>,
    def: Vec<i16>,
    rep: Vec<i16>,
}

impl ReadColumn {
    /// The reader of top-level column `root`, whose Arrow type `schema` gives.
    pub(crate) fn new(descr: &SchemaDescriptor, root: usize, schema: &Schema) -> ReadColumn {
        let field = schema.field(root);
        let leaves: Vec<usize> = (0..descr.num_columns())
            .filter(|&i| descr.get_column_root_idx(i) == root)
            .collect();
        let numeric = match field.data_type() {
            DataType::List(child) | DataType::FixedSizeList(child, _) => {
                Numeric::of(child.data_type()).map(|n| (n, true))
            }
            t => Numeric::of(t).map(|n| (n, false)),
        };
        let mut column = ReadColumn {
            name: field.name().clone(),
            leaf: None,
            max_def: 0,
            reader: None,
            def: Vec::new(),
            rep: Vec::new(),
        };
        let (Some((numeric, list)), &[leaf]) = (numeric, leaves.as_slice()) else {
            return column;
        };
        let leaf_descr = descr.column(leaf);
        column.max_def = leaf_descr.max_def_level();
        let shape = match (list, leaf_descr.max_rep_level()) {
            (false, 0) => Shape::Flat,
            (true, 1) => {
                // The definition levels of the nodes from the root down to the repeated one.
                let mut level = 0;
                let mut present = None;
                let mut node = descr.get_column_root(leaf);
                let parts = leaf_descr.path().parts();
                for depth in 0..parts.len() {
                    let info = node.get_basic_info();
                    let repetition = info.has_repetition().then(|| info.repetition());
                    if repetition != Some(Repetition::REQUIRED) {
                        level += 1;
                    }
                    if depth == 0 {
                        // A repeated root is never null: an empty list.
                        present = Some(match repetition {
                            Some(Repetition::OPTIONAL) => level,
                            _ => 0,
                        });
                    }
                    if repetition == Some(Repetition::REPEATED) {
                        break;
                    }
                    let child = parts.get(depth + 1).and_then(|name| {
                        node.get_fields().iter().find(|f| f.name() == name.as_str())
                    });
                    match child {
                        Some(child) => node = child,
                        None => return column,
                    }
                }
                Shape::List {
                    present: present.unwrap_or(0),
                    element: level,
                }
            }
            _ => return column,
        };
        column.leaf = Some((leaf, numeric, shape));
        column
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Starts reading `group`.
    pub(crate) fn start_group(&mut self, group: &dyn RowGroupReader) -> Result<()> {
        self.reader = match self.leaf {
            Some((leaf, ..)) => Some(group.get_column_reader(leaf)?),
            None => None,
        };
        Ok(())
    }

    /// The next `n` rows of the column in the current row group.
    pub(crate) fn read(&mut self, n: usize) -> Result<ArrayRef> {
        let (Some((_, numeric, shape)), Some(reader)) = (self.leaf, self.reader.as_mut()) else {
            return Err(ParquetError::General(format!(
                "column {:?} is not one of numbers",
                self.name
            )));
        };
        let levels = Levels {
            def: &mut self.def,
            rep: &mut self.rep,
            max_def: self.max_def,
            shape,
        };
        match (reader, numeric) {
            (ColumnReader::Int32ColumnReader(r), n32) => {
                let (values, layout) = levels.read(r, n)?;
                match n32 {
                    Numeric::I8 => layout.array::<Int8Type>(values.iter().map(|&v| v as i8)),
                    Numeric::I16 => layout.array::<Int16Type>(values.iter().map(|&v| v as i16)),
                    Numeric::U8 => layout.array::<UInt8Type>(values.iter().map(|&v| v as u8)),
                    Numeric::U16 => layout.array::<UInt16Type>(values.iter().map(|&v| v as u16)),
                    Numeric::U32 => layout.array::<UInt32Type>(values.iter().map(|&v| v as u32)),
                    _ => layout.array_of::<Int32Type>(values),
                }
            }
            (ColumnReader::Int64ColumnReader(r), n64) => {
                let (values, layout) = levels.read(r, n)?;
                match n64 {
                    Numeric::U64 => layout.array::<UInt64Type>(values.iter().map(|&v| v as u64)),
                    _ => layout.array_of::<Int64Type>(values),
                }
            }
            (ColumnReader::FloatColumnReader(r), Numeric::F32) => {
                let (values, layout) = levels.read(r, n)?;
                layout.array_of::<Float32Type>(values)
            }
            (ColumnReader::DoubleColumnReader(r), Numeric::F64) => {
                let (values, layout) = levels.read(r, n)?;
                layout.array_of::<Float64Type>(values)
            }
            (ColumnReader::FixedLenByteArrayColumnReader(r), Numeric::F16) => {
                let (values, layout) = levels.read(r, n)?;
                let mut halves = Vec::with_capacity(values.len());
                for v in &values {
                    match v.data() {
                        &[a, b] => halves.push(f16::from_le_bytes([a, b])),
                        other => {
                            return Err(ParquetError::General(format!(
                                "a half-precision value of {} bytes",
                                other.len()
                            )));
                        }
                    }
                }
                layout.array_of::<Float16Type>(halves)
            }
            (_, numeric) => Err(ParquetError::General(format!(
                "column {:?}: its pages do not hold the {numeric:?} values its type says",
                self.name
            ))),
        }
    }
}

/// The level buffers of a column, and how to read them.
struct Levels<'a> {
    def: &'a mut Vec<i16>,
    rep: &'a mut Vec<i16>,
    max_def: i16,
    shape: Shape,
}

/// Where the values of a batch go: which slots hold a value, and for lists, the rows' offsets
/// and which rows are null.
struct Layout {
    rows: usize,
    /// Per slot (a row, or a list's element): whether it holds a value; `None` when all do.
    valid: Option<Vec<bool>>,
    /// For a list column: the offsets of the rows' lists in the slots, and the rows' validity.
    list: Option<(Vec<i32>, Option<Vec<bool>>)>,
}

impl Levels<'_> {
    /// Reads `n` rows: the column's non-null values, in order (not yet spread over the
    /// slots), and where they go.
    fn read<T: ParquetType>(
        self,
        reader: &mut ColumnReaderImpl<T>,
        n: usize,
    ) -> Result<(Vec<T::T>, Layout)> {
        self.def.clear();
        self.rep.clear();
        let mut values = Vec::new();
        let (rows, _, levels) =
            reader.read_records(n, Some(&mut *self.def), Some(&mut *self.rep), &mut values)?;
        if rows != n {
            return Err(ParquetError::General(format!(
                "its column chunk ends after {rows} of the row group's rows"
            )));
        }
        let def = &self.def[..self.def.len().min(levels)];
        match self.shape {
            Shape::Flat => {
                let valid = (self.max_def > 0 && values.len() < n).then(|| {
                    def.iter()
                        .map(|&d| d == self.max_def)
                        .collect::<Vec<bool>>()
                });
                let layout = Layout {
                    rows: n,
                    valid,
                    list: None,
                };
                Ok((values, layout))
            }
            Shape::List { present, element } => {
                let rep = &self.rep[..self.rep.len().min(levels)];
                if def.len() != levels || rep.len() != levels {
                    return Err(ParquetError::General(
                        "fewer levels than the pages declare".into(),
                    ));
                }
                let mut offsets = Vec::with_capacity(n + 1);
                let mut rows_valid = Vec::with_capacity(n);
                let mut valid = Vec::with_capacity(levels);
                let mut slots: i32 = 0;
                for (&d, &r) in def.iter().zip(rep) {
                    if r == 0 {
                        offsets.push(slots);
                        rows_valid.push(d >= present);
                    }
                    if d >= element {
                        valid.push(d == self.max_def);
                        slots = slots.checked_add(1).ok_or_else(|| {
                            ParquetError::General("more than 2^31 list elements in a batch".into())
                        })?;
                    }
                }
                offsets.push(slots);
                if offsets.len() != n + 1 {
                    return Err(ParquetError::General(format!(
                        "{} lists where {n} rows were read",
                        offsets.len() - 1
                    )));
                }
                let all_valid = valid.iter().all(|&v| v);
                let rows_all_valid = rows_valid.iter().all(|&v| v);
                let layout = Layout {
                    rows: slots as usize,
                    valid: (!all_valid).then_some(valid),
                    list: Some((offsets, (!rows_all_valid).then_some(rows_valid))),
                };
                Ok((values, layout))
            }
        }
    }
}

impl Layout {
    /// The values spread over the slots (a null slot holds the default value).
    fn spread<T: Default + Clone>(&self, dense: Vec<T>) -> Result<Vec<T>> {
        let Some(valid) = &self.valid else {
            if dense.len() != self.rows {
                return Err(ParquetError::General(format!(
                    "{} values for {} slots",
                    dense.len(),
                    self.rows
                )));
            }
            return Ok(dense);
        };
        let mut out = vec![T::default(); valid.len()];
        let mut values = dense.into_iter();
        for (slot, _) in out.iter_mut().zip(valid).filter(|(_, v)| **v) {
            *slot = values
                .next()
                .ok_or_else(|| ParquetError::General("fewer values than levels".into()))?;
        }
        Ok(out)
    }

    fn array<A: ArrowPrimitiveType>(
        self,
        values: impl Iterator<Item = A::Native>,
    ) -> Result<ArrayRef> {
        self.array_of::<A>(values.collect())
    }

    /// The Arrow array of the non-null values spread over the slots: a primitive array, or
    /// for a list column a list array of them.
    fn array_of<A: ArrowPrimitiveType>(self, values: Vec<A::Native>) -> Result<ArrayRef> {
        let values = self.spread(values)?;
        let nulls = self.valid.map(NullBuffer::from);
        let values = PrimitiveArray::<A>::new(ScalarBuffer::from(values), nulls);
        Ok(match self.list {
            None => Arc::new(values),
            Some((offsets, rows_valid)) => Arc::new(ListArray::new(
                Arc::new(Field::new("item", A::DATA_TYPE, true)),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                Arc::new(values),
                rows_valid.map(NullBuffer::from),
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parquet::data_type::{DoubleType, Int32Type as PqInt32};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use tempfile::TempDir;

    use crate::test_util::{err_of, rows};
    use crate::{Missing, ReadOptions, read_table};

    /// Lists as older writers lay them out: a LIST group whose repeated field is the element
    /// (two levels), and a repeated field outside any LIST group; both read one list per row,
    /// a null list as a row of NaN.
    #[test]
    fn two_level_and_bare_repeated_lists_are_read() {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("old.parquet");
        let schema = parse_message_type(
            "message schema {
                optional group two (LIST) { repeated double element; }
                repeated int32 bare;
                optional double x;
            }",
        )
        .unwrap();
        let file = std::fs::File::create(&path).unwrap();
        let props = Arc::new(WriterProperties::builder().build());
        let mut writer = SerializedFileWriter::new(file, Arc::new(schema), props).unwrap();
        let mut group = writer.next_row_group().unwrap();
        // [1, 2], [3, 4], null.
        let mut c = group.next_column().unwrap().unwrap();
        c.typed::<DoubleType>()
            .write_batch(
                &[1.0, 2.0, 3.0, 4.0],
                Some(&[2, 2, 2, 2, 0]),
                Some(&[0, 1, 0, 1, 0]),
            )
            .unwrap();
        c.close().unwrap();
        // [5, 6], [7, 8], [9, 10].
        let mut c = group.next_column().unwrap().unwrap();
        c.typed::<PqInt32>()
            .write_batch(
                &[5, 6, 7, 8, 9, 10],
                Some(&[1; 6]),
                Some(&[0, 1, 0, 1, 0, 1]),
            )
            .unwrap();
        c.close().unwrap();
        let mut c = group.next_column().unwrap().unwrap();
        c.typed::<DoubleType>()
            .write_batch(&[1.0, 2.0, 3.0], Some(&[1, 1, 1]), None)
            .unwrap();
        c.close().unwrap();
        group.close().unwrap();
        writer.close().unwrap();

        let list = |name: &str| ReadOptions {
            list_column: Some(name.into()),
            missing: Missing::AsNan,
            ..Default::default()
        };
        let t = read_table(std::slice::from_ref(&path), &list("two")).unwrap();
        let got = rows(&t.data);
        assert_eq!(got[..2], [vec![1.0, 2.0], vec![3.0, 4.0]]);
        assert!(got[2].iter().all(|v| v.is_nan()), "{got:?}");
        let t = read_table(std::slice::from_ref(&path), &list("bare")).unwrap();
        assert!(!t.data.is_f32(), "int32 is not exact in f32");
        assert_eq!(
            rows(&t.data),
            [vec![5.0, 6.0], vec![7.0, 8.0], vec![9.0, 10.0]]
        );
        let e = err_of(read_table(
            std::slice::from_ref(&path),
            &ReadOptions::default(),
        ));
        assert!(e.contains("column \"two\" holds List("), "{e}");
    }
}
