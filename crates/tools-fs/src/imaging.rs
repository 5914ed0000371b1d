//! What `image_info` and `image_edit` share: the formats they handle, bounded decoding, encoding,
//! and the sentences their errors are written in.
//!
//! Every image is read whole through the workspace (capped by `Limits::max_file_bytes`) and
//! decoded from memory. The format is detected from the content, never from the extension.
//! Decoding is bounded twice: by the size each side may claim ([`MAX_SIDE`]) and by the memory
//! the decoded pixels may take ([`MAX_ALLOC`]), both checked from the header before any pixel
//! is decoded, so a small file claiming a huge canvas (a decompression bomb) costs nothing.

use std::io::{Cursor, Read};

use image::codecs::bmp::BmpEncoder;
use image::codecs::gif::GifEncoder;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::codecs::webp::WebPEncoder;
use image::metadata::Orientation;
use image::{ColorType, DynamicImage, ImageDecoder, ImageError, ImageReader};
use serde::Deserialize;
use tool_core::schemars::{self, JsonSchema};
use tool_core::workspace::Workspace;
use tool_core::{ToolError, WsPath};

/// The largest width or height decoded or produced, in pixels.
pub(crate) const MAX_SIDE: u32 = 16_384;
/// The most memory decoded (or produced) pixels may take.
pub(crate) const MAX_ALLOC: u64 = 256 * 1024 * 1024;
/// The most memory an edit may use beside the decoded input (its result and, for a resize,
/// the resampling buffer of 16 bytes a pixel).
pub(crate) const MAX_WORK: u64 = 2 * MAX_ALLOC;
/// JPEG quality used when writing JPEG.
const JPEG_QUALITY: u8 = 90;
/// GIF palette quantisation speed (1 = best and slowest, 30 = fastest).
const GIF_SPEED: i32 = 10;

/// An image format the image tools read and write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    /// PNG (lossless, keeps transparency).
    Png,
    /// JPEG (lossy, quality 90, no transparency).
    Jpeg,
    /// GIF (256-colour palette; only the first frame of an animation is kept).
    Gif,
    /// WebP (written lossless).
    Webp,
    /// BMP (uncompressed).
    Bmp,
}

impl ImageFormat {
    /// Every format, in the order they are listed to the model.
    pub(crate) const ALL: [ImageFormat; 5] = [
        ImageFormat::Png,
        ImageFormat::Jpeg,
        ImageFormat::Gif,
        ImageFormat::Webp,
        ImageFormat::Bmp,
    ];

    /// The lowercase name used in arguments and structured output.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpeg",
            ImageFormat::Gif => "gif",
            ImageFormat::Webp => "webp",
            ImageFormat::Bmp => "bmp",
        }
    }

    /// The name written in sentences.
    pub(crate) fn label(self) -> &'static str {
        match self {
            ImageFormat::Png => "PNG",
            ImageFormat::Jpeg => "JPEG",
            ImageFormat::Gif => "GIF",
            ImageFormat::Webp => "WebP",
            ImageFormat::Bmp => "BMP",
        }
    }

    /// The MIME type.
    pub(crate) fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Gif => "image/gif",
            ImageFormat::Webp => "image/webp",
            ImageFormat::Bmp => "image/bmp",
        }
    }

    /// The file extension given to new files.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpg",
            ImageFormat::Gif => "gif",
            ImageFormat::Webp => "webp",
            ImageFormat::Bmp => "bmp",
        }
    }

    /// The format a file name's extension names, if any (case-insensitive).
    pub(crate) fn from_file_name(path: &str) -> Option<ImageFormat> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (stem, ext) = name.rsplit_once('.')?;
        if stem.is_empty() {
            return None;
        }
        match ext.to_ascii_lowercase().as_str() {
            "png" => Some(ImageFormat::Png),
            "jpg" | "jpeg" | "jpe" | "jfif" => Some(ImageFormat::Jpeg),
            "gif" => Some(ImageFormat::Gif),
            "webp" => Some(ImageFormat::Webp),
            "bmp" | "dib" => Some(ImageFormat::Bmp),
            _ => None,
        }
    }

    /// Whether vision models accept it as image content as it is.
    pub(crate) fn vision_ready(self) -> bool {
        !matches!(self, ImageFormat::Bmp)
    }

    fn from_image(f: image::ImageFormat) -> Option<ImageFormat> {
        match f {
            image::ImageFormat::Png => Some(ImageFormat::Png),
            image::ImageFormat::Jpeg => Some(ImageFormat::Jpeg),
            image::ImageFormat::Gif => Some(ImageFormat::Gif),
            image::ImageFormat::WebP => Some(ImageFormat::Webp),
            image::ImageFormat::Bmp => Some(ImageFormat::Bmp),
            _ => None,
        }
    }
}

/// `path` with its extension replaced by `format`'s (or added when it has none).
pub(crate) fn with_extension(path: &str, format: ImageFormat) -> String {
    let (dir, name) = match path.rfind('/') {
        Some(i) => (&path[..=i], &path[i + 1..]),
        None => ("", path),
    };
    let stem = match name.rfind('.') {
        Some(i) if i > 0 => &name[..i],
        _ => name,
    };
    format!("{dir}{stem}.{}", format.extension())
}

/// A short, readable size: `512 bytes`, `123 KB`, `4.2 MB`, `1.5 GB` (binary units).
pub(crate) fn human_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if bytes < KIB {
        format!("{bytes} bytes")
    } else if bytes < MIB {
        format!("{} KB", (bytes + KIB / 2) / KIB)
    } else {
        let (value, unit) = if bytes < MIB * 1024 {
            (bytes as f64 / MIB as f64, "MB")
        } else {
            (bytes as f64 / (MIB * 1024) as f64, "GB")
        };
        let text = format!("{value:.1}");
        format!("{} {unit}", text.strip_suffix(".0").unwrap_or(&text))
    }
}

/// `(short name, sentence name)` of a colour type: `("rgba8", "RGBA 8-bit")`.
pub(crate) fn color_names(color: ColorType) -> (&'static str, &'static str) {
    match color {
        ColorType::L8 => ("l8", "grayscale 8-bit"),
        ColorType::La8 => ("la8", "grayscale+alpha 8-bit"),
        ColorType::Rgb8 => ("rgb8", "RGB 8-bit"),
        ColorType::Rgba8 => ("rgba8", "RGBA 8-bit"),
        ColorType::L16 => ("l16", "grayscale 16-bit"),
        ColorType::La16 => ("la16", "grayscale+alpha 16-bit"),
        ColorType::Rgb16 => ("rgb16", "RGB 16-bit"),
        ColorType::Rgba16 => ("rgba16", "RGBA 16-bit"),
        ColorType::Rgb32F => ("rgb32f", "RGB 32-bit float"),
        ColorType::Rgba32F => ("rgba32f", "RGBA 32-bit float"),
        _ => ("other", "an unusual colour type"),
    }
}

/// How an EXIF orientation turns the stored pixels for display, as words (`None` for none).
pub(crate) fn orientation_words(o: Orientation) -> Option<&'static str> {
    match o {
        Orientation::NoTransforms => None,
        Orientation::Rotate90 => Some("rotate 90° clockwise"),
        Orientation::Rotate180 => Some("rotate 180°"),
        Orientation::Rotate270 => Some("rotate 270° clockwise"),
        Orientation::FlipHorizontal => Some("flip horizontally"),
        Orientation::FlipVertical => Some("flip vertically"),
        Orientation::Rotate90FlipH => Some("rotate 90° clockwise and flip horizontally"),
        Orientation::Rotate270FlipH => Some("rotate 270° clockwise and flip horizontally"),
    }
}

/// Reads an image file whole through the workspace, refusing files above `max_bytes`.
pub(crate) fn read_image_file(
    ws: &Workspace,
    path: &WsPath,
    max_bytes: u64,
) -> Result<Vec<u8>, ToolError> {
    let meta = ws.metadata(path)?;
    if meta.len > max_bytes {
        return Err(ToolError::Failed(format!(
            "{path} is {}, more than the {} that image tools read (limits.max_file_bytes); shrink it outside Toolshed or raise that limit in the configuration.",
            human_size(meta.len),
            human_size(max_bytes)
        )));
    }
    ws.read_to_end(path, max_bytes)
}

/// Reads at most `max_bytes` from the start of an image file, and its full size: enough for the
/// header of an image of any size (headers come first in every format read here).
pub(crate) fn read_image_prefix(
    ws: &Workspace,
    path: &WsPath,
    max_bytes: u64,
) -> Result<(Vec<u8>, u64), ToolError> {
    let (file, meta) = ws.open_read(path)?;
    let mut bytes = Vec::with_capacity(meta.len.min(max_bytes) as usize);
    file.take(max_bytes)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::Failed(format!("Reading {path} failed: {e}.")))?;
    let size = meta.len.max(bytes.len() as u64);
    Ok((bytes, size))
}

/// What the header of an image says, read without decoding its pixels.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe {
    /// The format detected from the content.
    pub(crate) format: ImageFormat,
    /// Stored width in pixels.
    pub(crate) width: u32,
    /// Stored height in pixels.
    pub(crate) height: u32,
    /// The colour type the pixels decode to.
    pub(crate) color: ColorType,
    /// The EXIF orientation (how to turn the stored pixels for display).
    pub(crate) orientation: Orientation,
    /// Bytes the decoded pixels take.
    pub(crate) decoded_bytes: u64,
}

impl Probe {
    /// Width and height as displayed, after the EXIF orientation.
    pub(crate) fn display_dims(&self) -> (u32, u32) {
        match self.orientation {
            Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH => (self.height, self.width),
            _ => (self.width, self.height),
        }
    }

    /// Why the image is too large to decode, as a sentence fragment, or `None` if it is not.
    pub(crate) fn too_large(&self) -> Option<String> {
        if self.width > MAX_SIDE || self.height > MAX_SIDE {
            Some(format!(
                "it claims {}x{} pixels, beyond the {MAX_SIDE}-pixel limit per side",
                self.width, self.height
            ))
        } else if self.decoded_bytes > MAX_ALLOC {
            Some(format!(
                "its {}x{} pixels would take {} of memory decoded, beyond the {} limit",
                self.width,
                self.height,
                human_size(self.decoded_bytes),
                human_size(MAX_ALLOC)
            ))
        } else {
            None
        }
    }
}

/// The decoder's limits: `sides` bounds the claimed size (off for header-only reads).
fn limits(sides: bool) -> image::Limits {
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_ALLOC);
    if sides {
        limits.max_image_width = Some(MAX_SIDE);
        limits.max_image_height = Some(MAX_SIDE);
    }
    limits
}

/// A decoder front end over bytes in memory.
type Reader<'a> = ImageReader<Cursor<&'a [u8]>>;

/// A reader over `bytes` with its format detected from the content, or a sentence saying why
/// it is not an image these tools read.
fn reader<'a>(bytes: &'a [u8], shown: &str) -> Result<(Reader<'a>, ImageFormat), ToolError> {
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| ToolError::Failed(format!("Reading {shown} failed: {e}.")))?;
    let supported = "PNG, JPEG, GIF, WebP or BMP";
    match reader.format() {
        Some(f) => match ImageFormat::from_image(f) {
            Some(ours) => Ok((reader, ours)),
            None => Err(ToolError::Failed(format!(
                "{shown} is a {} image, which the image tools do not read; they read {supported}.",
                f.extensions_str()
                    .first()
                    .map(|e| e.to_ascii_uppercase())
                    .unwrap_or_else(|| format!("{f:?}"))
            ))),
        },
        None => Err(not_an_image(bytes, shown, supported)),
    }
}

fn not_an_image(bytes: &[u8], shown: &str, supported: &str) -> ToolError {
    let head = &bytes[..bytes.len().min(512)];
    let text = std::str::from_utf8(head).ok().map(str::trim_start);
    let hint = match text {
        _ if bytes.is_empty() => " (the file is empty)".to_string(),
        Some(t) if t.starts_with("<svg") || (t.starts_with("<?xml") && t.contains("<svg")) => {
            " (it is an SVG, a vector format; read it as text with file_read)".to_string()
        }
        Some(_) if !crate::text::looks_binary(head) => {
            " (it looks like text; read it with file_read)".to_string()
        }
        _ => String::new(),
    };
    ToolError::Failed(format!(
        "{shown} is not an image the image tools can read: its content is not {supported}{hint}."
    ))
}

/// Reads the header only: format, size, colour type, orientation. The claimed size is not
/// bounded here (nothing is decoded); check [`Probe::too_large`] before decoding.
pub(crate) fn probe(bytes: &[u8], shown: &str) -> Result<Probe, ToolError> {
    let (mut reader, format) = reader(bytes, shown)?;
    reader.limits(limits(false));
    let mut decoder = reader
        .into_decoder()
        .map_err(|e| image_error(e, shown, format))?;
    let (width, height) = decoder.dimensions();
    let color = decoder.color_type();
    // A malformed EXIF block is not worth refusing the image over.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    Ok(Probe {
        format,
        width,
        height,
        color,
        orientation,
        decoded_bytes: decoder.total_bytes(),
    })
}

/// Refuses an image whose header claims more than the decoding limits.
pub(crate) fn check_decodable(probe: &Probe, shown: &str) -> Result<(), ToolError> {
    match probe.too_large() {
        Some(why) => Err(ToolError::Failed(format!(
            "{shown} cannot be decoded: {why} (it may be a decompression bomb); the image tools refuse images that large."
        ))),
        None => Ok(()),
    }
}

/// Decodes the whole image within the limits. The EXIF orientation is *not* applied.
pub(crate) fn decode(bytes: &[u8], shown: &str) -> Result<(Probe, DynamicImage), ToolError> {
    let probe = probe(bytes, shown)?;
    check_decodable(&probe, shown)?;
    let (mut reader, format) = reader(bytes, shown)?;
    reader.limits(limits(true));
    let image = reader.decode().map_err(|e| image_error(e, shown, format))?;
    Ok((probe, image))
}

/// Turns a decoder error into a sentence about `shown`.
fn image_error(e: ImageError, shown: &str, format: ImageFormat) -> ToolError {
    let f = format.label();
    match e {
        ImageError::Limits(_) => ToolError::Failed(format!(
            "{shown} cannot be decoded within the limits ({MAX_SIDE} pixels per side, {} of pixels); it may be a decompression bomb, and the image tools refuse it.",
            human_size(MAX_ALLOC)
        )),
        ImageError::Decoding(e) => ToolError::Failed(format!(
            "{shown} starts like a {f} file but could not be decoded ({e}); it is corrupt or truncated, so re-create or re-download it."
        )),
        ImageError::IoError(e) => ToolError::Failed(format!(
            "{shown} starts like a {f} file but ends too early ({e}); it is truncated, so re-create or re-download it."
        )),
        ImageError::Unsupported(e) => ToolError::Failed(format!(
            "{shown} is a {f} file using a feature the image tools do not support ({e})."
        )),
        other => ToolError::Failed(format!("{shown} could not be decoded as {f}: {other}.")),
    }
}

/// An encoded image and what was lost on the way, if anything.
#[derive(Debug)]
pub(crate) struct Encoded {
    /// The file's bytes.
    pub(crate) bytes: Vec<u8>,
    /// A sentence about what the format could not keep (alpha, depth), if anything.
    pub(crate) note: Option<String>,
}

/// Encodes `img` as `format`, converting its colour type to one the format stores.
pub(crate) fn encode(img: &DynamicImage, format: ImageFormat) -> Result<Encoded, ToolError> {
    let color = img.color();
    let alpha = color.has_alpha();
    let deep = !matches!(
        color,
        ColorType::L8 | ColorType::La8 | ColorType::Rgb8 | ColorType::Rgba8
    );
    let gray = matches!(
        color,
        ColorType::L8 | ColorType::La8 | ColorType::L16 | ColorType::La16
    );
    let mut lost: Vec<&str> = Vec::new();
    // The colour type each format is given; `None` keeps the image as it is.
    let converted: Option<DynamicImage> = match format {
        ImageFormat::Png => None,
        ImageFormat::Jpeg => {
            if alpha {
                lost.push("the transparency (JPEG has none)");
            }
            if deep {
                lost.push("the extra bit depth (JPEG stores 8 bits per channel)");
            }
            match (gray, alpha || deep) {
                (_, false) => None,
                (true, true) => Some(DynamicImage::ImageLuma8(img.to_luma8())),
                (false, true) => Some(DynamicImage::ImageRgb8(img.to_rgb8())),
            }
        }
        ImageFormat::Gif => {
            lost.push("colours beyond a 256-colour palette");
            if matches!(color, ColorType::Rgb8 | ColorType::Rgba8) {
                None
            } else if alpha {
                Some(DynamicImage::ImageRgba8(img.to_rgba8()))
            } else {
                Some(DynamicImage::ImageRgb8(img.to_rgb8()))
            }
        }
        ImageFormat::Webp | ImageFormat::Bmp => {
            if deep {
                lost.push(if format == ImageFormat::Webp {
                    "the extra bit depth (WebP stores 8 bits per channel)"
                } else {
                    "the extra bit depth (BMP stores 8 bits per channel)"
                });
                Some(match (gray, alpha) {
                    (true, false) => DynamicImage::ImageLuma8(img.to_luma8()),
                    (true, true) => DynamicImage::ImageLumaA8(img.to_luma_alpha8()),
                    (false, false) => DynamicImage::ImageRgb8(img.to_rgb8()),
                    (false, true) => DynamicImage::ImageRgba8(img.to_rgba8()),
                })
            } else {
                None
            }
        }
    };
    let img = converted.as_ref().unwrap_or(img);
    let mut bytes = Vec::new();
    let result = match format {
        ImageFormat::Png => img.write_with_encoder(PngEncoder::new(&mut bytes)),
        ImageFormat::Jpeg => {
            img.write_with_encoder(JpegEncoder::new_with_quality(&mut bytes, JPEG_QUALITY))
        }
        ImageFormat::Gif => {
            img.write_with_encoder(GifEncoder::new_with_speed(&mut bytes, GIF_SPEED))
        }
        ImageFormat::Webp => img.write_with_encoder(WebPEncoder::new_lossless(&mut bytes)),
        ImageFormat::Bmp => img.write_with_encoder(BmpEncoder::new(&mut bytes)),
    };
    result.map_err(|e| {
        ToolError::Failed(format!(
            "Encoding the result as {} failed ({e}); try another format, e.g. png.",
            format.label()
        ))
    })?;
    let note = if lost.is_empty() {
        None
    } else {
        Some(format!(
            "{} dropped {}.",
            format.label(),
            lost.join(" and ")
        ))
    };
    Ok(Encoded { bytes, note })
}

/// The formats, listed for sentences: `png, jpeg, gif, webp or bmp`.
pub(crate) fn format_list() -> String {
    let names: Vec<&str> = ImageFormat::ALL.iter().map(|f| f.as_str()).collect();
    let (last, rest) = names.split_last().expect("formats");
    format!("{} or {last}", rest.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{ImageBuffer, Rgb, Rgba};

    fn gradient(w: u32, h: u32) -> DynamicImage {
        DynamicImage::ImageRgb8(ImageBuffer::from_fn(w, h, |x, y| {
            Rgb([(x * 4) as u8, (y * 5) as u8, 128])
        }))
    }

    #[test]
    fn extensions_and_names() {
        let cases = [
            ("a/photo.PNG", Some(ImageFormat::Png)),
            ("photo.jpeg", Some(ImageFormat::Jpeg)),
            ("photo.jpg", Some(ImageFormat::Jpeg)),
            ("x.webp", Some(ImageFormat::Webp)),
            ("x.gif", Some(ImageFormat::Gif)),
            ("x.bmp", Some(ImageFormat::Bmp)),
            ("x.tiff", None),
            (".png", None),
            ("png", None),
            ("dir.png/file", None),
        ];
        for (name, want) in cases {
            assert_eq!(ImageFormat::from_file_name(name), want, "{name}");
        }
        assert_eq!(
            with_extension("a/b/photo.png", ImageFormat::Jpeg),
            "a/b/photo.jpg"
        );
        assert_eq!(with_extension("photo", ImageFormat::Webp), "photo.webp");
        assert_eq!(with_extension(".hidden", ImageFormat::Png), ".hidden.png");
        assert_eq!(with_extension("a.b/c", ImageFormat::Gif), "a.b/c.gif");
        assert_eq!(format_list(), "png, jpeg, gif, webp or bmp");
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_size(0), "0 bytes");
        assert_eq!(human_size(1023), "1023 bytes");
        assert_eq!(human_size(126_000), "123 KB");
        assert_eq!(human_size(5 * 1024 * 1024), "5 MB");
        assert_eq!(human_size(5 * 1024 * 1024 + 300 * 1024), "5.3 MB");
        assert_eq!(human_size(3 << 29), "1.5 GB");
    }

    #[test]
    fn every_format_round_trips_and_is_detected_from_content() {
        let img = gradient(64, 48);
        for format in ImageFormat::ALL {
            let enc = encode(&img, format).unwrap();
            let (probe, back) = decode(&enc.bytes, "x").unwrap();
            assert_eq!(probe.format, format);
            assert_eq!((back.width(), back.height()), (64, 48), "{format:?}");
            assert_eq!(format.vision_ready(), format != ImageFormat::Bmp);
        }
    }

    #[test]
    fn headers_are_read_from_a_prefix() {
        let img = DynamicImage::ImageRgb8(ImageBuffer::from_fn(200, 150, |x, y| {
            Rgb([(x * y) as u8, (x ^ y) as u8, (x * 7 + y * 13) as u8])
        }));
        for format in ImageFormat::ALL {
            let bytes = encode(&img, format).unwrap().bytes;
            let probe =
                probe(&bytes[..bytes.len() / 3], "x").unwrap_or_else(|e| panic!("{format:?}: {e}"));
            assert_eq!(
                (probe.format, probe.width, probe.height),
                (format, 200, 150)
            );
        }
    }

    #[test]
    fn jpeg_drops_alpha_and_says_so() {
        let img = DynamicImage::ImageRgba8(ImageBuffer::from_pixel(8, 8, Rgba([1, 2, 3, 4])));
        let enc = encode(&img, ImageFormat::Jpeg).unwrap();
        assert!(enc.note.unwrap().contains("transparency"));
        assert!(encode(&img, ImageFormat::Png).unwrap().note.is_none());
        let deep = DynamicImage::ImageRgb16(ImageBuffer::new(4, 4));
        for format in ImageFormat::ALL {
            let enc = encode(&deep, format).unwrap();
            let (_, back) = decode(&enc.bytes, "x").unwrap();
            assert_eq!(back.width(), 4, "{format:?}");
        }
    }

    #[test]
    fn non_images_are_named_for_what_they_are() {
        let cases: [(&[u8], &str); 5] = [
            (b"", "the file is empty"),
            (b"hello world\n", "looks like text"),
            (b"<svg xmlns='x'></svg>", "SVG"),
            (b"\x00\x01\x02\x03binary", "not PNG, JPEG, GIF, WebP or BMP"),
            (b"II*\x00\x08\x00\x00\x00", "TIFF image"),
        ];
        for (bytes, want) in cases {
            let err = probe(bytes, "f").unwrap_err().to_string();
            assert!(err.contains(want), "{want}: {err}");
        }
        let mut png = encode(&gradient(8, 8), ImageFormat::Png).unwrap().bytes;
        png.truncate(png.len() - 20);
        let err = decode(&png, "cut.png").unwrap_err().to_string();
        assert!(err.contains("cut.png starts like a PNG file"), "{err}");
    }

    #[test]
    fn exif_orientation_swaps_display_dims() {
        let probe = Probe {
            format: ImageFormat::Jpeg,
            width: 40,
            height: 30,
            color: ColorType::Rgb8,
            orientation: Orientation::Rotate90,
            decoded_bytes: 3600,
        };
        assert_eq!(probe.display_dims(), (30, 40));
        assert!(probe.too_large().is_none());
        let big = Probe {
            width: MAX_SIDE,
            height: MAX_SIDE,
            decoded_bytes: u64::from(MAX_SIDE) * u64::from(MAX_SIDE) * 3,
            ..probe
        };
        assert!(big.too_large().unwrap().contains("memory"));
    }
}
