//! Model files mapped into memory, and f32 (or f16) tensors read in place
//! from them.
//!
//! A process that embeds one text (a hook's `mempalace add`) needs only a
//! few rows of MiniLM's 47 MB word-embedding table; reading the whole
//! 91 MB file and widening every tensor into a fresh buffer cost it about
//! 100 ms. Mapping the file costs a few system calls, and the pages the
//! encoder touches come from the page cache when it touches them.
//!
//! This module holds the crate's `unsafe` outside `kernels`: mapping a
//! file, and viewing aligned little-endian bytes as `f32` or `u16`. Nothing else
//! belongs here; parsing the safetensors layout is `weights`'.

#![allow(unsafe_code)]

use std::fs::File;
use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

/// The bytes of a model file: mapped read-only, or owned (weights built in
/// memory, tests).
pub enum Bytes {
    /// A read-only private mapping of the whole file.
    Mapped(memmap2::Mmap),
    /// Bytes held in memory.
    Owned(Vec<u8>),
}

impl Bytes {
    /// Maps `path` read-only.
    pub fn map(path: &Path) -> std::io::Result<Self> {
        Self::map_with(path, memmap2::MmapOptions::new())
    }

    /// Maps `path` read-only with every page entered into the mapping at
    /// once (`MAP_POPULATE`): for a file every use reads whole, one system
    /// call instead of a page fault per few pages on first use.
    pub fn map_populated(path: &Path) -> std::io::Result<Self> {
        Self::map_with(path, memmap2::MmapOptions::new().populate().clone())
    }

    fn map_with(path: &Path, options: memmap2::MmapOptions) -> std::io::Result<Self> {
        let file = File::open(path)?;
        // SAFETY: the mapping is read-only and private, so this process
        // never writes through it. Its contents change under us only if
        // another process rewrites the file in place; mempalace never does
        // (`model fetch` writes a staging folder and renames it into place,
        // which leaves this mapping on the old file), and a user who edits
        // weights in place while a process embeds gets wrong vectors or a
        // SIGBUS, the same as with any mapped file. The mapping lives as
        // long as this value, which owns it.
        let map = unsafe { options.map(&file)? };
        Ok(Self::Mapped(map))
    }
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Mapped(map) => map,
            Self::Owned(bytes) => bytes,
        }
    }
}

/// Element types a tensor can be viewed as in place: plain numbers for
/// which every bit pattern is a valid value.
pub trait Element: Copy + Send + Sync + 'static + private::Sealed {}

impl Element for f32 {}
/// f16 values, as their bits.
impl Element for u16 {}

mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for u16 {}
}

/// The values of a tensor: read in place from the file's bytes when they
/// are little-endian values of `T` at an aligned address, else held in a
/// buffer of their own. Either way it reads as a `[T]`.
pub struct Values<T: Element>(Storage<T>);

/// f32 values of a tensor.
pub type Floats = Values<f32>;

/// f16 values of a tensor, as their bits.
pub type Halves = Values<u16>;

enum Storage<T> {
    /// Values in a buffer of their own.
    Owned(Vec<T>),
    /// `len` values at byte `start` of `bytes`. Invariant (checked by
    /// [`Values::in_place`], the only constructor): `start` is aligned for
    /// `T` in memory, the range lies inside `bytes`, and the platform is
    /// little-endian.
    InPlace { bytes: Arc<Bytes>, start: usize, len: usize },
}

impl<T: Element> Values<T> {
    /// `len` values starting at byte `start` of `bytes`, viewed in place;
    /// `None` when the range is outside the bytes, misaligned, or the
    /// platform is big-endian (the caller then widens a copy).
    pub fn in_place(bytes: &Arc<Bytes>, start: usize, len: usize) -> Option<Self> {
        let end = start.checked_add(len.checked_mul(std::mem::size_of::<T>())?)?;
        let range = bytes.get(start..end)?;
        let aligned = (range.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>());
        (aligned && cfg!(target_endian = "little"))
            .then(|| Self(Storage::InPlace { bytes: Arc::clone(bytes), start, len }))
    }

    /// Whether the values are read in place from the file (tests, logs).
    pub fn is_in_place(&self) -> bool {
        matches!(self.0, Storage::InPlace { .. })
    }

    /// Tells the kernel these values are read a few at a time, far apart
    /// (a word-embedding table: one row per token): a page fault then
    /// enters just its page, not the 16 around it nor a readahead window,
    /// which is most of a first lookup's cost in a one-text process. Only
    /// for values in place in a mapped file; a refused advice changes
    /// nothing but speed, so it is not an error.
    pub fn expect_scattered_reads(&self) {
        if let Storage::InPlace { bytes, start, len } = &self.0
            && let Bytes::Mapped(map) = &**bytes
            && let Err(error) = map.advise_range(memmap2::Advice::Random, *start, *len * std::mem::size_of::<T>())
        {
            tracing::debug!(%error, "the kernel refused the advice on a weights mapping");
        }
    }
}

impl<T: Element> From<Vec<T>> for Values<T> {
    fn from(values: Vec<T>) -> Self {
        Self(Storage::Owned(values))
    }
}

impl<T: Element> Deref for Values<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.0 {
            Storage::Owned(values) => values,
            Storage::InPlace { bytes, start, len } => {
                let range = &bytes[*start..*start + *len * std::mem::size_of::<T>()];
                // SAFETY: `in_place` checked that the range lies inside the
                // bytes and starts at an address aligned for `T`; `bytes`
                // is kept alive by the Arc this value holds and is never
                // written (a read-only mapping or an owned Vec no one else
                // can reach mutably). Every bit pattern is a valid `T` (f32
                // or u16, the only `Element`s), and on a little-endian
                // platform (also checked) these are the file's
                // little-endian values.
                unsafe { std::slice::from_raw_parts(range.as_ptr().cast::<T>(), *len) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_bytes_read_in_place_and_misaligned_ones_do_not() {
        let values = [1.5_f32, -2.0, 3.25];
        for skip in 0..4 {
            let mut raw: Vec<u8> = vec![0; skip];
            raw.extend(values.iter().flat_map(|v| v.to_le_bytes()));
            let bytes = Arc::new(Bytes::Owned(raw));
            let aligned = (bytes.as_ptr() as usize + skip).is_multiple_of(4);
            match Floats::in_place(&bytes, skip, 3) {
                Some(floats) => {
                    assert!(aligned, "misaligned start {skip} taken in place");
                    assert!(floats.is_in_place());
                    assert_eq!(&*floats, &values);
                }
                None => assert!(!aligned, "aligned start {skip} refused"),
            }
            assert!(Floats::in_place(&bytes, skip, 4).is_none(), "past the end");
            assert!(Floats::in_place(&bytes, usize::MAX - 2, 1).is_none(), "overflow");
        }
    }

    #[test]
    fn a_mapped_file_reads_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bin");
        let values = [0.5_f32, 7.0, -1e-3, f32::MIN_POSITIVE];
        std::fs::write(&path, values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let bytes = Arc::new(Bytes::map(&path).unwrap());
        assert_eq!(bytes.len(), 16);
        // A mapping starts on a page boundary, so offset 0 is aligned.
        let floats = Floats::in_place(&bytes, 0, 4).unwrap();
        assert_eq!(&*floats, &values);
        assert_eq!(&floats[1..3], &[7.0, -1e-3]);
    }
}
