use async_trait::async_trait;
use base64::Engine;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::imaging::{self, ImageFormat, MAX_SIDE};

/// The largest image `image_info` attaches as image content.
pub(crate) const MAX_ATTACH_BYTES: u64 = 5 * 1024 * 1024;
/// The longest side suggested for a smaller copy to attach.
const SUGGESTED_SIDE: u32 = 1568;

/// Arguments of `image_info`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageInfoArgs {
    /// The image file, relative to the workspace root. PNG, JPEG, GIF, WebP or BMP; the format
    /// is detected from the content, not the extension.
    pub path: String,
    /// Also attach the image itself (base64 image content) so a vision model can look at it.
    /// Refused above 5 MB; make a smaller copy with image_edit first.
    #[serde(default)]
    pub include_base64: bool,
}

/// `image_info`: format, size and colour type of an image; optionally the image itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct ImageInfo;

#[async_trait]
impl Tool for ImageInfo {
    const NAME: &'static str = "image_info";
    type Args = ImageInfoArgs;

    fn description(&self) -> String {
        format!(
            "Describe an image file: format (detected from the content), width and height, \
             colour type, EXIF orientation and file size. Only the header is read unless \
             `include_base64` is true, which also attaches the image for a vision model to look \
             at (BMP is attached as PNG); that is refused above {} and for images over \
             {MAX_SIDE} pixels a side, so make a smaller copy with image_edit (action resize) \
             first.",
            imaging::human_size(MAX_ATTACH_BYTES)
        )
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        Ok(vec![Access::Read(ctx.workspace.resolve(&args.path)?)])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let path = ctx.workspace.resolve(&args.path)?;
        let ws = ctx.workspace.clone();
        let max_file = ctx.limits.max_file_bytes;
        blocking(ctx, move || {
            let shown = path.to_string();
            // The header is all that is needed unless the image is attached, so a file over
            // the read limit is inspected from its first `max_file` bytes.
            let (bytes, size) = imaging::read_image_prefix(&ws, &path, max_file)?;
            let whole = bytes.len() as u64 == size;
            let probe = imaging::probe(&bytes, &shown).map_err(|e| {
                if whole {
                    e
                } else {
                    ToolError::Failed(format!(
                        "{shown} is {}, so only its first {} were read (limits.max_file_bytes), and no image header could be read from them: {e}",
                        imaging::human_size(size),
                        imaging::human_size(max_file)
                    ))
                }
            })?;
            let (color_short, color_long) = imaging::color_names(probe.color);
            let (dw, dh) = probe.display_dims();
            let mut text = format!(
                "{shown}: {} image, {}x{} pixels, {color_long}, {}.",
                probe.format.label(),
                probe.width,
                probe.height,
                imaging::human_size(size)
            );
            let orientation = imaging::orientation_words(probe.orientation);
            if let Some(words) = orientation {
                text.push_str(&format!(
                    " Its EXIF orientation says to {words} for display, so it shows as {dw}x{dh}; image_edit applies that orientation."
                ));
            }
            let too_large = probe.too_large();
            if let Some(why) = &too_large {
                text.push_str(&format!(
                    " It cannot be decoded: {why} (it may be a decompression bomb), so image_edit and include_base64 refuse it."
                ));
            }
            let mut structured = json!({
                "path": shown,
                "format": probe.format.as_str(),
                "mime_type": probe.format.mime(),
                "width": probe.width,
                "height": probe.height,
                "display_width": dw,
                "display_height": dh,
                "color_type": color_short,
                "has_alpha": probe.color.has_alpha(),
                "orientation": orientation,
                "bytes": size,
                "decodable": too_large.is_none(),
                "attached": false,
            });
            if !args.include_base64 {
                return Ok(ToolOutput::text(text).with_structured(structured));
            }

            let suggestion = || {
                let side = if dw >= dh { "width" } else { "height" };
                let small = imaging::with_extension(
                    &format!("{}-small", strip_ext(&args.path)),
                    ImageFormat::Jpeg,
                );
                format!(
                    r#"image_edit {{"path": {}, "action": "resize", "{side}": {SUGGESTED_SIDE}, "output": {}}}"#,
                    json!(args.path),
                    json!(small)
                )
            };
            if size > MAX_ATTACH_BYTES {
                return Err(ToolError::Failed(format!(
                    "{shown} is {}, more than the {} image_info attaches; make a smaller copy with {} and call image_info on that with include_base64.",
                    imaging::human_size(size),
                    imaging::human_size(MAX_ATTACH_BYTES),
                    suggestion()
                )));
            }
            if !whole {
                return Err(ToolError::Failed(format!(
                    "{shown} is {}, more than the {} that image tools read (limits.max_file_bytes), so it cannot be attached; make a smaller copy outside Toolshed or raise that limit in the configuration.",
                    imaging::human_size(size),
                    imaging::human_size(max_file)
                )));
            }
            // Decoding proves the data is a whole, valid image before a model provider sees it
            // (a corrupt image can fail the whole request there).
            let (_, image) = imaging::decode(&bytes, &shown)?;
            let (mime, data, sent) = if probe.format.vision_ready() {
                (probe.format.mime(), bytes, probe.format)
            } else {
                let png = imaging::encode(&image, ImageFormat::Png)?.bytes;
                if png.len() as u64 > MAX_ATTACH_BYTES {
                    return Err(ToolError::Failed(format!(
                        "{shown} is {} as PNG, more than the {} image_info attaches; make a smaller copy with {} and call image_info on that with include_base64.",
                        imaging::human_size(png.len() as u64),
                        imaging::human_size(MAX_ATTACH_BYTES),
                        suggestion()
                    )));
                }
                (ImageFormat::Png.mime(), png, ImageFormat::Png)
            };
            if sent == probe.format {
                text.push_str(&format!(" The image is attached ({mime})."));
            } else {
                text.push_str(&format!(
                    " The image is attached as {} ({mime}), since vision models do not take {}.",
                    sent.label(),
                    probe.format.label()
                ));
            }
            structured["attached"] = json!(true);
            structured["attached_mime_type"] = json!(mime);
            let encoded = base64::engine::general_purpose::STANDARD.encode(&data);
            Ok(ToolOutput::text(text)
                .with_structured(structured)
                .with_image(mime, encoded))
        })
        .await
    }
}

/// `path` without the extension of its last component.
fn strip_ext(path: &str) -> &str {
    let start = path.rfind('/').map_or(0, |i| i + 1);
    match path[start..].rfind('.') {
        Some(i) if i > 0 => &path[..start + i],
        _ => path,
    }
}

// Test fixtures build real files directly.
#[allow(clippy::disallowed_methods)]
#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use image::{DynamicImage, ImageBuffer, Rgb};
    use tool_core::{Content, Limits, Policy, Workspace};

    use super::*;

    fn ctx(dir: &std::path::Path) -> ToolContext {
        ToolContext::new(
            Workspace::local(dir).unwrap(),
            Arc::new(Policy::supervised()),
            Arc::new(Limits::default()),
        )
    }

    fn write(dir: &std::path::Path, name: &str, format: ImageFormat) -> Vec<u8> {
        let img = DynamicImage::ImageRgb8(ImageBuffer::from_fn(64, 48, |x, y| {
            Rgb([(x * 4) as u8, (y * 5) as u8, 7])
        }));
        let bytes = imaging::encode(&img, format).unwrap().bytes;
        std::fs::write(dir.join(name), &bytes).unwrap();
        bytes
    }

    fn args(path: &str, include_base64: bool) -> ImageInfoArgs {
        ImageInfoArgs {
            path: path.into(),
            include_base64,
        }
    }

    #[test]
    fn strips_only_the_last_extension() {
        assert_eq!(strip_ext("a/b.c/photo.png"), "a/b.c/photo");
        assert_eq!(strip_ext("a.b/photo"), "a.b/photo");
        assert_eq!(strip_ext(".png"), ".png");
    }

    #[tokio::test]
    async fn reports_header_and_attaches_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        // The extension lies; the content decides.
        let bytes = write(dir.path(), "photo.png", ImageFormat::Jpeg);
        let out = ImageInfo
            .call(&ctx, args("photo.png", false))
            .await
            .unwrap();
        let text = out.joined_text();
        assert!(
            text.starts_with("photo.png: JPEG image, 64x48 pixels, RGB 8-bit"),
            "{text}"
        );
        assert_eq!(out.content.len(), 1);
        let s = out.structured.unwrap();
        assert_eq!(s["format"], "jpeg");
        assert_eq!(s["bytes"], bytes.len());
        assert_eq!(s["attached"], false);

        let out = ImageInfo.call(&ctx, args("photo.png", true)).await.unwrap();
        match &out.content[1] {
            Content::Image { mime_type, data } => {
                assert_eq!(mime_type, "image/jpeg");
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .unwrap();
                assert_eq!(raw, bytes, "the file's own bytes are attached");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn bmp_is_attached_as_png() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        write(dir.path(), "pic.bmp", ImageFormat::Bmp);
        let out = ImageInfo.call(&ctx, args("pic.bmp", true)).await.unwrap();
        assert!(
            out.joined_text().contains("attached as PNG"),
            "{}",
            out.joined_text()
        );
        match &out.content[1] {
            Content::Image { mime_type, data } => {
                assert_eq!(mime_type, "image/png");
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .unwrap();
                assert_eq!(imaging::probe(&raw, "x").unwrap().format, ImageFormat::Png);
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn attaching_is_capped_and_suggests_a_resize() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        // Noise does not compress: a 1400x1400 RGB PNG of noise is about 5.6 MiB.
        let mut seed = 0x2545_f491_u32;
        let img = DynamicImage::ImageRgb8(ImageBuffer::from_fn(1400, 1400, |_, _| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            Rgb([seed as u8, (seed >> 8) as u8, (seed >> 16) as u8])
        }));
        let bytes = imaging::encode(&img, ImageFormat::Png).unwrap().bytes;
        assert!(bytes.len() as u64 > MAX_ATTACH_BYTES);
        std::fs::write(dir.path().join("noise.png"), &bytes).unwrap();
        let info = ImageInfo
            .call(&ctx, args("noise.png", false))
            .await
            .unwrap();
        assert_eq!(info.structured.unwrap()["decodable"], true);
        let err = ImageInfo
            .call(&ctx, args("noise.png", true))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("more than the 5 MB image_info attaches"),
            "{err}"
        );
        assert!(
            err.contains(
                r#"image_edit {"path": "noise.png", "action": "resize", "width": 1568, "output": "noise-small.jpg"}"#
            ),
            "{err}"
        );
    }
}
