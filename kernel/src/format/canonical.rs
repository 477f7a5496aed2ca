//! The strict postcard reader every object payload is decoded with (SPEC 3): postcard's
//! wire format, read as postcard 1.2 reads it, and only in its one canonical byte form.
//!
//! Postcard reads a varint with more bytes than its value needs (`0x85 0x00` is 5); every
//! other byte form it accepts is the one its encoder writes. So a payload is canonical
//! exactly when every varint it holds (integers, lengths, enum tags) ends in a non-zero
//! byte or is one byte long, and this reader notes any that does not as it reads, rather
//! than re-encoding the value to compare (a third of what decoding cost).
//!
//! That is so for the payload types slotlog has, whose reading is one to one: a map or a
//! set, which reads its keys in any order, would need its order checked too (none has one).
//!
//! It accepts and refuses what `postcard::take_from_bytes` does, byte for byte; the
//! property tests in `canonical_tests` hold it to that against postcard itself.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::Deserializer;

/// The name under which ids and hashes ask for their `[u8; N]` (a tuple struct of N
/// bytes, which postcard writes as the bytes): this reader hands them over as one slice
/// instead of a byte at a time through serde. Postcard ignores the name.
pub(crate) const FIXED_BYTES: &str = "slotlog::FixedBytes";

/// Why bytes did not read: every refusal is the same one to a caller (the payload does
/// not decode), so it carries nothing.
#[derive(Debug)]
pub(crate) struct Refused;

impl core::fmt::Display for Refused {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("payload does not decode")
    }
}

impl std::error::Error for Refused {}

impl de::Error for Refused {
    fn custom<T: core::fmt::Display>(_: T) -> Self {
        Refused
    }
}

/// Postcard's input, read from the front.
pub(crate) struct Reader<'de> {
    input: &'de [u8],
    /// A varint was longer than its value needs: the bytes are not the value's one form.
    overlong: bool,
}

/// What reading a whole payload found, in the order a caller must judge it.
pub(crate) enum Read<T> {
    /// The payload does not decode.
    Refused,
    /// The value decodes, with bytes left over.
    Trailing(usize),
    /// The value decodes from all the bytes, but not from its one form.
    Overlong,
    /// The value, from its one form.
    Canonical(T),
}

/// Reads one `T` from the whole of `input`.
pub(crate) fn read<'de, T: de::Deserialize<'de>>(input: &'de [u8]) -> Read<T> {
    let mut reader = Reader { input, overlong: false };
    let Ok(value) = T::deserialize(&mut reader) else {
        return Read::Refused;
    };
    if !reader.input.is_empty() {
        return Read::Trailing(reader.input.len());
    }
    if reader.overlong {
        return Read::Overlong;
    }
    Read::Canonical(value)
}

/// Bytes a varint of a `bits`-bit integer may take, and the most its last byte may hold
/// when it takes all of them (postcard's `varint_max` and `max_of_last_byte`).
const fn varint_bytes_max(bits: u32) -> usize {
    bits.div_ceil(7) as usize
}
const fn varint_last_byte_max(bits: u32) -> u8 {
    (1u8 << (bits % 7)) - 1
}

impl<'de> Reader<'de> {
    #[inline]
    fn pop(&mut self) -> Result<u8, Refused> {
        let [b, rest @ ..] = self.input else { return Err(Refused) };
        self.input = rest;
        Ok(*b)
    }

    #[inline]
    fn take(&mut self, len: usize) -> Result<&'de [u8], Refused> {
        if len > self.input.len() {
            return Err(Refused);
        }
        let (taken, rest) = self.input.split_at(len);
        self.input = rest;
        Ok(taken)
    }

    /// A varint of an unsigned integer of `BITS` bits (at most 64), as postcard reads it.
    #[inline]
    fn varint<const BITS: u32>(&mut self) -> Result<u64, Refused> {
        if let [b, rest @ ..] = self.input {
            if *b < 0x80 {
                self.input = rest;
                return Ok(u64::from(*b));
            }
        }
        self.varint_long::<BITS>()
    }

    fn varint_long<const BITS: u32>(&mut self) -> Result<u64, Refused> {
        let mut out = 0u64;
        for i in 0..varint_bytes_max(BITS) {
            let b = self.pop()?;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i == varint_bytes_max(BITS) - 1 && b > varint_last_byte_max(BITS) {
                    return Err(Refused);
                }
                // A last byte of zero adds nothing: one byte fewer held the same value.
                if b == 0 && i > 0 {
                    self.overlong = true;
                }
                return Ok(out);
            }
        }
        Err(Refused)
    }

    fn varint_u128(&mut self) -> Result<u128, Refused> {
        let mut out = 0u128;
        for i in 0..varint_bytes_max(128) {
            let b = self.pop()?;
            out |= u128::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i == varint_bytes_max(128) - 1 && b > varint_last_byte_max(128) {
                    return Err(Refused);
                }
                if b == 0 && i > 0 {
                    self.overlong = true;
                }
                return Ok(out);
            }
        }
        Err(Refused)
    }

    #[inline]
    fn len(&mut self) -> Result<usize, Refused> {
        // Postcard's usize is a u64 on the 64-bit targets slotlog builds for.
        let len = self.varint::<64>()?;
        usize::try_from(len).map_err(|_| Refused)
    }
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// A sequence of `len` elements, each read in turn.
struct Elements<'a, 'de> {
    reader: &'a mut Reader<'de>,
    len: usize,
}

impl<'de> Elements<'_, 'de> {
    /// The next element (or map key), or `None` once `len` are read.
    #[inline]
    fn next<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Refused> {
        if self.len == 0 {
            return Ok(None);
        }
        self.len -= 1;
        seed.deserialize(&mut *self.reader).map(Some)
    }
}

impl<'de> de::SeqAccess<'de> for Elements<'_, 'de> {
    type Error = Refused;

    #[inline]
    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>, Refused> {
        self.next(seed)
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        // As postcard: no hint past the bytes left, so a false length reserves nothing.
        (self.len <= self.reader.input.len()).then_some(self.len)
    }
}

impl<'de> de::MapAccess<'de> for Elements<'_, 'de> {
    type Error = Refused;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Refused> {
        self.next(seed)
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Refused> {
        seed.deserialize(&mut *self.reader)
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        Some(self.len)
    }
}

impl<'de> Deserializer<'de> for &mut Reader<'de> {
    type Error = Refused;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Refused> {
        Err(Refused)
    }

    #[inline]
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        match self.pop()? {
            0 => visitor.visit_bool(false),
            1 => visitor.visit_bool(true),
            _ => Err(Refused),
        }
    }

    #[inline]
    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        visitor.visit_i8(self.pop()? as i8)
    }

    #[inline]
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let v = self.varint::<16>()? as u16;
        visitor.visit_i16(((v >> 1) as i16) ^ -((v & 1) as i16))
    }

    #[inline]
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let v = self.varint::<32>()? as u32;
        visitor.visit_i32(((v >> 1) as i32) ^ -((v & 1) as i32))
    }

    #[inline]
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let v = self.varint::<64>()?;
        visitor.visit_i64(unzigzag(v))
    }

    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let v = self.varint_u128()?;
        visitor.visit_i128(((v >> 1) as i128) ^ -((v & 1) as i128))
    }

    #[inline]
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        visitor.visit_u8(self.pop()?)
    }

    #[inline]
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        visitor.visit_u16(self.varint::<16>()? as u16)
    }

    #[inline]
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        visitor.visit_u32(self.varint::<32>()? as u32)
    }

    #[inline]
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        visitor.visit_u64(self.varint::<64>()?)
    }

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        visitor.visit_u128(self.varint_u128()?)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let bytes = self.take(4)?;
        visitor.visit_f32(f32::from_le_bytes(bytes.try_into().map_err(|_| Refused)?))
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let bytes = self.take(8)?;
        visitor.visit_f64(f64::from_le_bytes(bytes.try_into().map_err(|_| Refused)?))
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        // Postcard: the length first refused past 4, then exactly one char of UTF-8.
        let len = self.len()?;
        if len > 4 {
            return Err(Refused);
        }
        let text = core::str::from_utf8(self.take(len)?).map_err(|_| Refused)?;
        let mut chars = text.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else { return Err(Refused) };
        visitor.visit_char(c)
    }

    #[inline]
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let len = self.len()?;
        let text = core::str::from_utf8(self.take(len)?).map_err(|_| Refused)?;
        visitor.visit_borrowed_str(text)
    }

    #[inline]
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        // Postcard hands an owned string over as a transient `&str`; so does this.
        let len = self.len()?;
        let text = core::str::from_utf8(self.take(len)?).map_err(|_| Refused)?;
        visitor.visit_str(text)
    }

    #[inline]
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let len = self.len()?;
        visitor.visit_borrowed_bytes(self.take(len)?)
    }

    #[inline]
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let len = self.len()?;
        visitor.visit_bytes(self.take(len)?)
    }

    #[inline]
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        match self.pop()? {
            0 => visitor.visit_none(),
            1 => visitor.visit_some(self),
            _ => Err(Refused),
        }
    }

    #[inline]
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        visitor.visit_unit()
    }

    #[inline]
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Refused> {
        visitor.visit_unit()
    }

    #[inline]
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Refused> {
        visitor.visit_newtype_struct(self)
    }

    #[inline]
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let len = self.len()?;
        visitor.visit_seq(Elements { reader: self, len })
    }

    #[inline]
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Refused> {
        visitor.visit_seq(Elements { reader: self, len })
    }

    #[inline]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Refused> {
        if name == FIXED_BYTES {
            return visitor.visit_borrowed_bytes(self.take(len)?);
        }
        visitor.visit_seq(Elements { reader: self, len })
    }

    #[inline]
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refused> {
        let len = self.len()?;
        visitor.visit_map(Elements { reader: self, len })
    }

    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refused> {
        visitor.visit_seq(Elements { reader: self, len: fields.len() })
    }

    #[inline]
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refused> {
        visitor.visit_enum(self)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Refused> {
        Err(Refused)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Refused> {
        Err(Refused)
    }
}

impl<'de> de::EnumAccess<'de> for &mut Reader<'de> {
    type Error = Refused;
    type Variant = Self;

    #[inline]
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Refused> {
        let tag = self.varint::<32>()? as u32;
        let variant = seed.deserialize(IntoDeserializer::<Refused>::into_deserializer(tag))?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for &mut Reader<'de> {
    type Error = Refused;

    #[inline]
    fn unit_variant(self) -> Result<(), Refused> {
        Ok(())
    }

    #[inline]
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Refused> {
        seed.deserialize(self)
    }

    #[inline]
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Refused> {
        visitor.visit_seq(Elements { reader: self, len })
    }

    #[inline]
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refused> {
        visitor.visit_seq(Elements { reader: self, len: fields.len() })
    }
}

/// `[u8; N]` as ids and hashes are written (N bytes, no length), read through
/// [`FIXED_BYTES`]: at once from this reader, a byte at a time from any other.
pub(crate) fn fixed_bytes<'de, D: Deserializer<'de>, const N: usize>(
    deserializer: D,
) -> Result<[u8; N], D::Error> {
    deserializer.deserialize_tuple_struct(FIXED_BYTES, N, FixedBytes::<N>)
}

struct FixedBytes<const N: usize>;

impl<'de, const N: usize> Visitor<'de> for FixedBytes<N> {
    type Value = [u8; N];

    fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{N} bytes")
    }

    #[inline]
    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<[u8; N], E> {
        bytes.try_into().map_err(|_| E::invalid_length(bytes.len(), &self))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<[u8; N], A::Error> {
        let mut out = [0u8; N];
        for (i, b) in out.iter_mut().enumerate() {
            *b = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(i, &self))?;
        }
        Ok(out)
    }
}
