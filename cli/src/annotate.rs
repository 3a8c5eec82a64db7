//! `gpuport run --annotate`: a copy of the image with what the model found drawn on it —
//! each detection's box in its class's colour with "label score" on a bar above it, or for a
//! classifier the ranked labels in the top-left corner. Glyphs are the 8×8 public-domain
//! bitmap font of the `font8x8` crate, scaled with the image; the file is PNG, written beside
//! its final name and renamed into place, so a failed write leaves nothing half-written.

use std::path::Path;

use gpuport_preprocess::image::RgbImage;
use serde_json::Value;

/// Distinct colours, one per class index (mod the length).
const PALETTE: [[u8; 3]; 10] = [
    [230, 25, 75],
    [60, 180, 75],
    [255, 225, 25],
    [0, 130, 200],
    [245, 130, 48],
    [145, 30, 180],
    [70, 240, 240],
    [240, 50, 230],
    [210, 245, 60],
    [250, 190, 212],
];

struct Canvas {
    width: usize,
    height: usize,
    pixels: Vec<u8>,
}

impl Canvas {
    fn fill(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, rgb: [u8; 3]) {
        let clamp = |v: i64, hi: usize| v.clamp(0, hi as i64) as usize;
        let (x0, x1) = (clamp(x0, self.width), clamp(x1, self.width));
        let (y0, y1) = (clamp(y0, self.height), clamp(y1, self.height));
        for y in y0..y1 {
            for x in x0..x1 {
                let i = 3 * (y * self.width + x);
                self.pixels[i..i + 3].copy_from_slice(&rgb);
            }
        }
    }

    fn outline(&mut self, b: [i64; 4], t: i64, rgb: [u8; 3]) {
        let [x0, y0, x1, y1] = b;
        self.fill(x0, y0, x1, y0 + t, rgb);
        self.fill(x0, y1 - t, x1, y1, rgb);
        self.fill(x0, y0, x0 + t, y1, rgb);
        self.fill(x1 - t, y0, x1, y1, rgb);
    }

    /// `text` with its top-left corner at (x, y), each glyph pixel `scale` pixels wide.
    fn text(&mut self, x: i64, y: i64, text: &str, scale: i64, rgb: [u8; 3]) {
        for (k, ch) in text.chars().enumerate() {
            let glyph = font8x8::legacy::BASIC_LEGACY
                .get(ch as usize)
                .copied()
                .unwrap_or(font8x8::legacy::BASIC_LEGACY[usize::from(b'?')]);
            let gx = x + k as i64 * 8 * scale;
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    // Bit 0 is the leftmost pixel.
                    if bits & (1 << col) != 0 {
                        let px = gx + col * scale;
                        let py = y + row as i64 * scale;
                        self.fill(px, py, px + scale, py + scale, rgb);
                    }
                }
            }
        }
    }

    /// A bar of `rgb` holding `text` in black or white, whichever reads better.
    fn label(&mut self, x: i64, y: i64, text: &str, scale: i64, rgb: [u8; 3]) {
        let pad = scale;
        let w = text.chars().count() as i64 * 8 * scale + 2 * pad;
        let h = 8 * scale + 2 * pad;
        // Keep the bar on the image: above the point when there is room, else below it.
        let y = if y - h >= 0 { y - h } else { y };
        let x = x.min(self.width as i64 - w).max(0);
        self.fill(x, y, x + w, y + h, rgb);
        let luma =
            0.299 * f64::from(rgb[0]) + 0.587 * f64::from(rgb[1]) + 0.114 * f64::from(rgb[2]);
        let ink = if luma > 140.0 {
            [0, 0, 0]
        } else {
            [255, 255, 255]
        };
        self.text(x + pad, y + pad, text, scale, ink);
    }
}

fn name(v: &Value) -> String {
    v["label"]
        .as_str()
        .map_or_else(|| format!("class {}", v["index"]), str::to_string)
}

/// Draws `report` (one image's `gpuport run` result: `results` or `detections`) onto a copy
/// of `image` and writes it to `out` as PNG.
pub fn annotate(image: &RgbImage, report: &Value, out: &Path) -> Result<(), String> {
    let mut c = Canvas {
        width: image.width(),
        height: image.height(),
        pixels: image.pixels().to_vec(),
    };
    let short = c.width.min(c.height) as i64;
    let thickness = (short / 200).max(2);
    let scale = (short / 320).max(1);
    if let Some(dets) = report["detections"].as_array() {
        for d in dets {
            let b: Vec<f64> = d["box"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default();
            let [x0, y0, x1, y1] = b[..] else { continue };
            let rgb = PALETTE[d["index"].as_u64().unwrap_or(0) as usize % PALETTE.len()];
            let b = [
                x0.floor() as i64,
                y0.floor() as i64,
                x1.ceil() as i64,
                y1.ceil() as i64,
            ];
            c.outline(b, thickness, rgb);
            let text = format!("{} {:.2}", name(d), d["score"].as_f64().unwrap_or(0.0));
            c.label(b[0], b[1], &text, scale, rgb);
        }
    }
    if let Some(results) = report["results"].as_array() {
        let line = (8 * scale + 2 * scale) as usize;
        for (k, r) in results.iter().enumerate() {
            let text = format!(
                "{:.1}% {}",
                r["score"].as_f64().unwrap_or(0.0) * 100.0,
                name(r)
            );
            let y = ((k + 1) * line) as i64;
            c.label(0, y, &text, scale, PALETTE[k % PALETTE.len()]);
        }
    }
    let img =
        image::RgbImage::from_raw(c.width as u32, c.height as u32, c.pixels).ok_or("image size")?;
    let tmp = out.with_extension("png.partial");
    img.save_with_format(&tmp, image::ImageFormat::Png)
        .and_then(|()| std::fs::rename(&tmp, out).map_err(image::ImageError::IoError))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", out.display())
        })
}
