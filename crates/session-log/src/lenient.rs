//! Lenient, single-pass JSON reading on top of `serde_json`.
//!
//! The reference reads log JSON with JavaScript: any value of the wrong type simply does not
//! match, repeated keys keep the last value, and nesting depth is unlimited. [`Shape`] gives the
//! same behaviour with serde: a shape says what it wants from an object, array, string or scalar,
//! and every other kind of value yields its `fallback` instead of an error. Parts a shape does not
//! read are skipped with [`IgnoredAny`] or kept as [`RawValue`], which `serde_json` scans without
//! recursion, so deep nesting can never overflow the stack.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::text::parse_with_surrogate_repair;

/// What a reader wants from one JSON value. Every method has a default that skips the value and
/// returns [`Shape::fallback`].
pub(crate) trait Shape<'de>: Sized {
    /// The result.
    type Out;

    /// The result for a value of a kind this shape does not read.
    fn fallback(self) -> Self::Out;

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(self.fallback())
    }

    fn array<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Out, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.fallback())
    }

    fn string(self, _value: Cow<'de, str>) -> Self::Out {
        self.fallback()
    }

    fn boolean(self, _value: bool) -> Self::Out {
        self.fallback()
    }

    fn unsigned(self, _value: u64) -> Self::Out {
        self.fallback()
    }

    fn signed(self, _value: i64) -> Self::Out {
        self.fallback()
    }

    fn other_scalar(self) -> Self::Out {
        self.fallback()
    }
}

/// Runs a [`Shape`] as a `serde` seed.
pub(crate) struct Lenient<S>(pub S);

impl<'de, S: Shape<'de>> DeserializeSeed<'de> for Lenient<S> {
    type Value = S::Out;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Out, D::Error> {
        deserializer.deserialize_any(LenientVisitor(self.0, PhantomData))
    }
}

struct LenientVisitor<'de, S>(S, PhantomData<&'de ()>);

impl<'de, S: Shape<'de>> Visitor<'de> for LenientVisitor<'de, S> {
    type Value = S::Out;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<S::Out, E> {
        Ok(self.0.boolean(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<S::Out, E> {
        Ok(self.0.signed(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<S::Out, E> {
        Ok(self.0.unsigned(v))
    }

    fn visit_f64<E>(self, _v: f64) -> Result<S::Out, E> {
        Ok(self.0.other_scalar())
    }

    fn visit_str<E>(self, v: &str) -> Result<S::Out, E> {
        Ok(self.0.string(Cow::Owned(v.to_owned())))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<S::Out, E> {
        Ok(self.0.string(Cow::Borrowed(v)))
    }

    fn visit_string<E>(self, v: String) -> Result<S::Out, E> {
        Ok(self.0.string(Cow::Owned(v)))
    }

    fn visit_unit<E>(self) -> Result<S::Out, E> {
        Ok(self.0.other_scalar())
    }

    fn visit_none<E>(self) -> Result<S::Out, E> {
        Ok(self.0.other_scalar())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<S::Out, A::Error> {
        self.0.array(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<S::Out, A::Error> {
        self.0.object(map)
    }
}

/// An object key, borrowed from the input when it has no escapes.
pub(crate) struct Key<'de>(pub Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A string value, or `None` for any other kind of value.
pub(crate) struct Str;

impl<'de> Shape<'de> for Str {
    type Out = Option<Cow<'de, str>>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn string(self, value: Cow<'de, str>) -> Self::Out {
        Some(value)
    }
}

/// `true` exactly when the value is the boolean `true` (`"true"` and `1` are not).
pub(crate) struct IsTrue;

impl Shape<'_> for IsTrue {
    type Out = bool;
    fn fallback(self) -> bool {
        false
    }
    fn boolean(self, value: bool) -> bool {
        value
    }
}

/// A non-negative integer, or `None`.
pub(crate) struct Unsigned;

impl Shape<'_> for Unsigned {
    type Out = Option<u64>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn unsigned(self, value: u64) -> Self::Out {
        Some(value)
    }
}

/// An integer that fits `i64` (a `time`), or `None`.
pub(crate) struct Int;

impl Shape<'_> for Int {
    type Out = Option<i64>;
    fn fallback(self) -> Self::Out {
        None
    }
    fn unsigned(self, value: u64) -> Self::Out {
        i64::try_from(value).ok()
    }
    fn signed(self, value: i64) -> Self::Out {
        Some(value)
    }
}

/// Reads the next map value with a shape.
pub(crate) fn value<'de, A: MapAccess<'de>, S: Shape<'de>>(
    map: &mut A,
    shape: S,
) -> Result<S::Out, A::Error> {
    map.next_value_seed(Lenient(shape))
}

/// Skips the next map value.
pub(crate) fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(|_| ())
}

/// Reads the next map key.
pub(crate) fn key<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    Ok(map.next_key::<Key<'de>>()?.map(|k| k.0))
}

/// The members of one JSON object as raw values, for small objects read in several steps.
/// Lookups return the **last** value of a repeated key, as JavaScript does.
#[derive(Debug)]
pub struct RawObject<'a> {
    entries: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> RawObject<'a> {
    /// Parses `raw` as an object; `None` when it is any other kind of value.
    pub fn parse(raw: &'a RawValue) -> Option<Self> {
        Self::parse_str(raw.get())
    }

    /// Parses `text` as an object; `None` when it is not exactly one JSON object.
    pub fn parse_str(text: &'a str) -> Option<Self> {
        let trimmed = text.trim_start_matches([' ', '\t', '\n', '\r']);
        if !trimmed.starts_with('{') {
            return None;
        }
        serde_json::from_str::<RawObject<'a>>(text).ok()
    }

    /// The last value of `key`.
    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.entries
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
    }

    /// The keys, in order (a repeated key once per occurrence).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_ref())
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject<'de>, A::Error> {
                let mut entries = Vec::new();
                while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
                    entries.push((k, map.next_value::<&'de RawValue>()?));
                }
                Ok(RawObject { entries })
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// The elements of a JSON array as raw values; `None` when `raw` is not an array.
pub fn raw_array(raw: &RawValue) -> Option<Vec<&RawValue>> {
    if !raw.get().starts_with('[') {
        return None;
    }
    serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok()
}

/// Decodes a raw JSON string literal; `None` when `raw` is not a string. Escaped lone surrogates
/// become U+FFFD.
pub fn raw_string(raw: &RawValue) -> Option<String> {
    if !raw.get().starts_with('"') {
        return None;
    }
    parse_with_surrogate_repair(raw.get(), |text| serde_json::from_str::<String>(text)).ok()
}

/// Whether a raw value is the literal `true`.
pub fn raw_is_true(raw: &RawValue) -> bool {
    raw.get() == "true"
}
