//! A walker of Thrift's compact protocol, the encoding of Parquet's footer and page headers,
//! that only checks a structure before the `parquet` crate decodes it: that crate sizes
//! vectors by the element counts it reads and recurses on nesting, so a damaged count would
//! make it abort on the allocation and a damaged nesting overflow the stack. Here every
//! element count and byte length must fit in the bytes left (every element takes at least
//! one byte), and nesting stops at [`MAX_DEPTH`]. The walk also hands back the integer fields
//! of the top struct and of the structs directly inside it (a page header's sizes).

/// Deeper than any Parquet structure (the footer nests about 6 levels).
const MAX_DEPTH: usize = 48;

/// An integer (or boolean, as 0 or 1) field found by [`walk_struct`]: its id, and the id of
/// the field of the top struct it is inside (0 for a field of the top struct itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct IntField {
    pub parent: i16,
    pub id: i16,
    pub value: i64,
}

/// Walks the struct that starts `buf`: returns how many bytes it takes and its integer fields
/// (of the top struct and of its direct child structs), or what is wrong with it.
pub(super) fn walk_struct(buf: &[u8]) -> Result<(usize, Vec<IntField>), String> {
    let mut w = Walker {
        buf,
        at: 0,
        ints: Vec::new(),
    };
    w.walk(0, 0)?;
    Ok((w.at, w.ints))
}

/// The value of the integer field `id` inside field `parent` (0: the top struct).
pub(super) fn int_field(fields: &[IntField], parent: i16, id: i16) -> Option<i64> {
    fields
        .iter()
        .find(|f| f.parent == parent && f.id == id)
        .map(|f| f.value)
}

struct Walker<'a> {
    buf: &'a [u8],
    at: usize,
    ints: Vec<IntField>,
}

impl Walker<'_> {
    fn left(&self) -> usize {
        self.buf.len() - self.at
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .buf
            .get(self.at)
            .ok_or_else(|| format!("it ends inside a structure, at byte {}", self.at))?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!(
            "a variable-length integer runs past 10 bytes at byte {}",
            self.at
        ))
    }

    fn zigzag(&mut self) -> Result<i64, String> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<(), String> {
        if n > self.left() as u64 {
            return Err(format!(
                "{what} of {n} bytes at byte {} runs past the {} bytes left",
                self.at,
                self.left()
            ));
        }
        self.at += n as usize;
        Ok(())
    }

    /// A count of elements that each take at least `min` bytes.
    fn count(&mut self, n: u64, min: u64, what: &str) -> Result<u64, String> {
        if n.saturating_mul(min) > self.left() as u64 {
            return Err(format!(
                "{what} of {n} elements at byte {} cannot fit in the {} bytes left",
                self.at,
                self.left()
            ));
        }
        Ok(n)
    }

    /// Walks a value of compact type `ty` (not a struct field's boolean, whose value is its
    /// type); returns it when it is an integer.
    fn value(&mut self, ty: u8, depth: usize) -> Result<Option<i64>, String> {
        match ty {
            // A boolean inside a list or a map: one byte.
            1 | 2 => self.byte().map(|b| Some(i64::from(b == 1))),
            3 => self.byte().map(|b| Some(i64::from(b as i8))),
            4..=6 => self.zigzag().map(Some),
            7 => self.skip(8, "a double").map(|()| None),
            8 => {
                let n = self.varint()?;
                self.skip(n, "a binary field").map(|()| None)
            }
            9 | 10 => {
                let header = self.byte()?;
                let elem = header & 0x0f;
                let n = match header >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                for _ in 0..self.count(n, 1, "a list")? {
                    self.nested(elem, depth)?;
                }
                Ok(None)
            }
            11 => {
                let n = self.varint()?;
                if n > 0 {
                    let kinds = self.byte()?;
                    for _ in 0..self.count(n, 2, "a map")? {
                        self.nested(kinds >> 4, depth)?;
                        self.nested(kinds & 0x0f, depth)?;
                    }
                }
                Ok(None)
            }
            12 => self.walk(depth + 1, 0).map(|()| None),
            // A UUID.
            13 => self.skip(16, "a UUID").map(|()| None),
            other => Err(format!("an unknown type code {other} at byte {}", self.at)),
        }
    }

    /// An element of a list or a map.
    fn nested(&mut self, ty: u8, depth: usize) -> Result<(), String> {
        if ty == 12 {
            return self.walk(depth + 1, -1);
        }
        self.value(ty, depth + 1).map(|_| ())
    }

    /// Walks a struct's fields up to its stop byte. `parent` is the id of the top struct's
    /// field this struct is (0 for the top struct, -1 when its integers are not wanted).
    fn walk(&mut self, depth: usize, parent: i16) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("structures nest deeper than {MAX_DEPTH} levels"));
        }
        let mut last: i16 = 0;
        loop {
            let header = self.byte()?;
            if header == 0 {
                return Ok(());
            }
            let ty = header & 0x0f;
            let id = match header >> 4 {
                0 => self.zigzag()? as i16,
                delta => last.wrapping_add(i16::from(delta)),
            };
            last = id;
            let value = match ty {
                // A struct field's boolean is its type.
                1 | 2 => Some(i64::from(ty == 1)),
                12 if depth == 0 => {
                    self.walk(depth + 1, id)?;
                    None
                }
                12 => {
                    self.walk(depth + 1, -1)?;
                    None
                }
                _ => self.value(ty, depth)?,
            };
            if let Some(value) = value
                && depth <= 1
                && parent >= 0
            {
                self.ints.push(IntField { parent, id, value });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structures_are_walked_and_their_integers_found() {
        // {1: i32 -3, 2: struct {1: i64 300, 2: true}, 4: binary "ab", 5: list<i32> [1, 2]}
        let bytes = [
            0x15, 0x05, // field 1, i32, zigzag(-3) = 5
            0x1c, // field 2, struct
            0x16, 0xd8, 0x04, // field 1, i64, zigzag(300) = 600
            0x11, // field 2, true
            0x00, // end of the inner struct
            0x28, 0x02, b'a', b'b', // field 4, binary of 2
            0x19, 0x25, 0x02, 0x04, // field 5, list of 2 i32
            0x00,
        ];
        let (len, ints) = walk_struct(&bytes).unwrap();
        assert_eq!(len, bytes.len());
        assert_eq!(int_field(&ints, 0, 1), Some(-3));
        assert_eq!(int_field(&ints, 2, 1), Some(300));
        assert_eq!(int_field(&ints, 2, 2), Some(1));
        assert_eq!(int_field(&ints, 0, 5), None);
    }

    #[test]
    fn counts_and_lengths_past_the_end_are_refused() {
        // A list claiming 2^31 elements in 3 bytes: parquet would reserve them at once.
        let e = walk_struct(&[0x19, 0xf5, 0x80, 0x80, 0x80, 0x80, 0x08]).unwrap_err();
        assert!(e.contains("cannot fit"), "{e}");
        let e = walk_struct(&[0x18, 0xff, 0xff, 0x03, 0x00]).unwrap_err();
        assert!(e.contains("runs past"), "{e}");
        let e = walk_struct(&[0x15]).unwrap_err();
        assert!(e.contains("ends inside"), "{e}");
        // Structs nested past the limit.
        let mut deep = vec![0x1c; 200];
        deep.extend(vec![0; 201]);
        let e = walk_struct(&deep).unwrap_err();
        assert!(e.contains("nest deeper"), "{e}");
        assert!(
            walk_struct(&[0x1f])
                .unwrap_err()
                .contains("unknown type code")
        );
    }
}
