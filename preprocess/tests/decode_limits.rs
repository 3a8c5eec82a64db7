//! A small file declaring huge dimensions is refused with a typed error before any pixel
//! buffer is allocated (the image crate's `from_decoder` allocates the declared size as is).

#![allow(clippy::unwrap_used)]

use gpuport_preprocess::image::{DecodeError, MAX_DECODE_ALLOC_BYTES, decode_image};

/// CRC-32 (IEEE, reflected), bit by bit: PNG chunk checksums for the hand-made file below.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    let body: Vec<u8> = kind.iter().chain(data).copied().collect();
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
    out
}

/// A PNG for an 8-bit RGB image of `width` x `height` whose one IDAT chunk holds an empty
/// zlib stream (no pixels).
fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &ihdr));
    out.extend(chunk(
        b"IDAT",
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    ));
    out.extend(chunk(b"IEND", &[]));
    out
}

#[test]
fn huge_declared_dimensions_are_refused_before_allocating() {
    // 100,000 x 100,000 RGB: 30 GB declared in a 77-byte file.
    let err = decode_image(&png_header(100_000, 100_000)).unwrap_err();
    match err {
        DecodeError::TooLarge {
            width,
            height,
            bytes,
            limit,
        } => {
            assert_eq!((width, height), (100_000, 100_000));
            assert_eq!(bytes, 30_000_000_000);
            assert_eq!(limit, MAX_DECODE_ALLOC_BYTES);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn a_header_within_the_limit_is_not_refused_for_its_size() {
    // 64 x 64 with no image data: an error, but a decode error, not a size refusal.
    let err = decode_image(&png_header(64, 64)).unwrap_err();
    assert!(!matches!(err, DecodeError::TooLarge { .. }), "{err:?}");
}
