use async_trait::async_trait;
use image::DynamicImage;
use image::imageops::FilterType;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, blocking};

use crate::imaging::{self, ImageFormat, MAX_SIDE, MAX_WORK};

/// What `image_edit` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Scale to `width` and/or `height`; given only one, the other keeps the aspect ratio.
    Resize,
    /// Keep the rectangle at `x`, `y` of size `width` x `height`.
    Crop,
    /// Turn clockwise by `degrees` (90, 180 or 270).
    Rotate,
    /// Re-encode in `format`.
    Convert,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Resize => "resize",
            Action::Crop => "crop",
            Action::Rotate => "rotate",
            Action::Convert => "convert",
        }
    }
}

/// Arguments of `image_edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageEditArgs {
    /// The image to edit, relative to the workspace root (PNG, JPEG, GIF, WebP or BMP; the
    /// format is detected from the content).
    pub path: String,
    /// `resize`, `crop`, `rotate` or `convert`.
    pub action: Action,
    /// resize: the new width in pixels (alone, the height follows the aspect ratio). crop: the
    /// rectangle's width. At most 16384.
    #[schemars(range(min = 1, max = 16384))]
    pub width: Option<u32>,
    /// resize: the new height in pixels (alone, the width follows the aspect ratio). crop: the
    /// rectangle's height. At most 16384.
    #[schemars(range(min = 1, max = 16384))]
    pub height: Option<u32>,
    /// crop: the rectangle's left edge, in pixels from the left (default 0).
    pub x: Option<u32>,
    /// crop: the rectangle's top edge, in pixels from the top (default 0).
    pub y: Option<u32>,
    /// rotate: the clockwise turn in degrees, 90, 180 or 270.
    pub degrees: Option<u32>,
    /// The format to write. Required for convert; otherwise it defaults to the format
    /// `output`'s extension names, else the input's format.
    pub format: Option<ImageFormat>,
    /// Where to write the result, relative to the workspace root (default: overwrite `path`;
    /// when `format` changes the format, `path` with the new extension). Missing parent
    /// directories are created.
    pub output: Option<String>,
}

/// `image_edit`: resize, crop, rotate or convert an image, writing the result atomically.
#[derive(Debug, Clone, Copy, Default)]
pub struct ImageEdit;

#[async_trait]
impl Tool for ImageEdit {
    const NAME: &'static str = "image_edit";
    type Args = ImageEditArgs;

    fn description(&self) -> String {
        format!(
            "Resize, crop, rotate or convert an image (PNG, JPEG, GIF, WebP, BMP; the input \
             format is detected from the content). resize takes `width` and/or `height` (one \
             alone keeps the aspect ratio); crop takes `x`, `y`, `width`, `height` inside the \
             image; rotate takes `degrees` 90, 180 or 270 clockwise; convert takes `format`. \
             The result overwrites `path` unless `output` names another file (convert \
             defaults to `path` with the new extension). The EXIF orientation is applied first, \
             and metadata is not kept. Images over {MAX_SIDE} pixels a side are refused. To \
             look at the result, call image_info with include_base64."
        )
    }

    fn annotations(&self) -> Annotations {
        Annotations::DESTRUCTIVE
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        let input = ctx.workspace.resolve(&args.path)?;
        let output = ctx.workspace.resolve(&output_path(args)?)?;
        Ok(vec![Access::Read(input), Access::Write(output)])
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let op = Op::from_args(&args)?;
        let input = ctx.workspace.resolve(&args.path)?;
        let out_name = output_path(&args)?;
        let output = ctx.workspace.resolve(&out_name)?;
        // The format written: asked for, else named by the output's extension, else the input's.
        let asked = args
            .format
            .or_else(|| ImageFormat::from_file_name(&out_name));
        let ws = ctx.workspace.clone();
        let max_read = ctx.limits.max_file_bytes;
        let max_write = ctx.limits.max_write_bytes as u64;
        blocking(ctx, move || {
            let shown = input.to_string();
            let bytes = imaging::read_image_file(&ws, &input, max_read)?;
            let probe = imaging::probe(&bytes, &shown)?;
            imaging::check_decodable(&probe, &shown)?;
            let before = probe.display_dims();
            // Check the arguments against the size before paying for decoding.
            let after = op.result_dims(before, &shown)?;
            let work = op.work_bytes(before, after, probe.color.bytes_per_pixel());
            if work > MAX_WORK {
                return Err(ToolError::invalid(
                    "",
                    format!(
                        "making a {}x{} result from {shown} ({}x{}) would take {} of memory, beyond the {} limit; ask for a smaller size",
                        after.0,
                        after.1,
                        before.0,
                        before.1,
                        imaging::human_size(work),
                        imaging::human_size(MAX_WORK)
                    ),
                ));
            }
            let (_, mut image) = imaging::decode(&bytes, &shown)?;
            drop(bytes);
            image.apply_orientation(probe.orientation);
            let edited = op.apply(image, after);
            debug_assert_eq!((edited.width(), edited.height()), after);
            let format = asked.unwrap_or(probe.format);
            let encoded = imaging::encode(&edited, format)?;
            let written = encoded.bytes.len() as u64;
            if written > max_write {
                return Err(ToolError::Failed(format!(
                    "The result would be {} as {}, more than the {} limit on writes (limits.max_write_bytes); make it smaller or write jpeg.",
                    imaging::human_size(written),
                    format.label(),
                    imaging::human_size(max_write)
                )));
            }
            let existed = ws.exists(&output)?;
            ws.write_atomic(&output, &encoded.bytes)?;

            let mut text = op.summary(&shown, probe.format, format, before, after);
            text.push_str(&format!(
                ", {} {output} ({}).",
                if existed { "overwrote" } else { "wrote" },
                imaging::human_size(written)
            ));
            if let Some(words) = imaging::orientation_words(probe.orientation) {
                text.push_str(&format!(
                    " The EXIF orientation ({words}) was applied first, so sizes are as displayed."
                ));
            }
            if let Some(note) = &encoded.note {
                text.push(' ');
                text.push_str(note);
            }
            Ok(ToolOutput::text(text).with_structured(json!({
                "action": op.action().as_str(),
                "path": shown,
                "output": output.to_string(),
                "input_format": probe.format.as_str(),
                "format": format.as_str(),
                "before": {"width": before.0, "height": before.1},
                "after": {"width": after.0, "height": after.1},
                "bytes": written,
                "created": !existed,
                "note": encoded.note,
            })))
        })
        .await
    }
}

/// Where the result goes: `output`, else `path` (with the new extension when `format` names
/// another format than `path`'s extension).
fn output_path(args: &ImageEditArgs) -> Result<String, ToolError> {
    if let Some(out) = &args.output {
        if let (Some(format), Some(named)) = (args.format, ImageFormat::from_file_name(out))
            && format != named
        {
            return Err(ToolError::invalid(
                "/output",
                format!(
                    "`{out}` has a {} extension but `format` is {}; name the output `{}`, or leave out `format`",
                    named.label(),
                    format.as_str(),
                    imaging::with_extension(out, format)
                ),
            ));
        }
        if out.trim().is_empty() {
            return Err(ToolError::invalid(
                "/output",
                "`output` is empty; give a file name such as `out/photo.png`, or leave it out to overwrite `path`",
            ));
        }
        return Ok(out.clone());
    }
    Ok(match args.format {
        Some(format) if ImageFormat::from_file_name(&args.path) != Some(format) => {
            imaging::with_extension(&args.path, format)
        }
        _ => args.path.clone(),
    })
}

/// A checked edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Resize {
        width: Option<u32>,
        height: Option<u32>,
    },
    Crop {
        x: u32,
        y: u32,
        width: u32,
        height: u32,
    },
    Rotate(u32),
    Convert,
}

fn not_for(field: &str, action: Action) -> ToolError {
    let belongs = match field {
        "x" | "y" => "crop",
        "degrees" => "rotate",
        _ => "resize and crop",
    };
    ToolError::invalid(
        format!("/{field}"),
        format!(
            "`{field}` applies only to {belongs}, not to {}; leave it out",
            action.as_str()
        ),
    )
}

fn side(field: &str, value: Option<u32>) -> Result<Option<u32>, ToolError> {
    match value {
        Some(v) if v == 0 || v > MAX_SIDE => Err(ToolError::invalid(
            format!("/{field}"),
            format!("`{field}` must be between 1 and {MAX_SIDE} pixels, not {v}"),
        )),
        v => Ok(v),
    }
}

impl Op {
    /// Checks the arguments that do not depend on the image.
    fn from_args(a: &ImageEditArgs) -> Result<Op, ToolError> {
        let width = side("width", a.width)?;
        let height = side("height", a.height)?;
        let reject = |fields: &[(&str, bool)]| -> Result<(), ToolError> {
            match fields.iter().find(|(_, given)| *given) {
                Some((name, _)) => Err(not_for(name, a.action)),
                None => Ok(()),
            }
        };
        let (x, y, deg) = (a.x.is_some(), a.y.is_some(), a.degrees.is_some());
        let (w, h) = (width.is_some(), height.is_some());
        match a.action {
            Action::Resize => {
                reject(&[("x", x), ("y", y), ("degrees", deg)])?;
                if !w && !h {
                    return Err(ToolError::invalid(
                        "",
                        "resize needs `width`, `height` or both (one alone keeps the aspect ratio)",
                    ));
                }
                Ok(Op::Resize { width, height })
            }
            Action::Crop => {
                reject(&[("degrees", deg)])?;
                match (width, height) {
                    (Some(width), Some(height)) => Ok(Op::Crop {
                        x: a.x.unwrap_or(0),
                        y: a.y.unwrap_or(0),
                        width,
                        height,
                    }),
                    _ => Err(ToolError::invalid(
                        if w { "/height" } else { "/width" },
                        "crop needs `width` and `height` (the rectangle's size in pixels), with `x` and `y` its top-left corner (default 0); call image_info to see the image's size",
                    )),
                }
            }
            Action::Rotate => {
                reject(&[("width", w), ("height", h), ("x", x), ("y", y)])?;
                match a.degrees {
                    Some(d @ (90 | 180 | 270)) => Ok(Op::Rotate(d)),
                    Some(d) => Err(ToolError::invalid(
                        "/degrees",
                        format!(
                            "`degrees` must be 90, 180 or 270 (clockwise), not {d}; for a quarter turn counter-clockwise use 270"
                        ),
                    )),
                    None => Err(ToolError::invalid(
                        "/degrees",
                        "rotate needs `degrees`: 90, 180 or 270 (clockwise)",
                    )),
                }
            }
            Action::Convert => {
                reject(&[
                    ("width", w),
                    ("height", h),
                    ("x", x),
                    ("y", y),
                    ("degrees", deg),
                ])?;
                if a.format.is_none() {
                    return Err(ToolError::invalid(
                        "/format",
                        format!("convert needs `format`: {}", imaging::format_list()),
                    ));
                }
                Ok(Op::Convert)
            }
        }
    }

    fn action(self) -> Action {
        match self {
            Op::Resize { .. } => Action::Resize,
            Op::Crop { .. } => Action::Crop,
            Op::Rotate(_) => Action::Rotate,
            Op::Convert => Action::Convert,
        }
    }

    /// The size of the result for an image of `(w, h)`, or why the edit does not fit it.
    fn result_dims(self, (w, h): (u32, u32), shown: &str) -> Result<(u32, u32), ToolError> {
        match self {
            Op::Resize { width, height } => {
                let (nw, nh) = match (width, height) {
                    (Some(nw), Some(nh)) => (u64::from(nw), u64::from(nh)),
                    (Some(nw), None) => (u64::from(nw), scale(h, nw, w)),
                    (None, Some(nh)) => (scale(w, nh, h), u64::from(nh)),
                    (None, None) => unreachable!("checked in from_args"),
                };
                if nw > u64::from(MAX_SIDE) || nh > u64::from(MAX_SIDE) {
                    return Err(ToolError::invalid(
                        "",
                        format!(
                            "keeping the aspect ratio of {shown} ({w}x{h}) gives {nw}x{nh}, beyond the {MAX_SIDE}-pixel limit per side; give both `width` and `height`, or a smaller size"
                        ),
                    ));
                }
                Ok((nw as u32, nh as u32))
            }
            Op::Crop {
                x,
                y,
                width,
                height,
            } => {
                let right = u64::from(x) + u64::from(width);
                let bottom = u64::from(y) + u64::from(height);
                let mut problems = Vec::new();
                if right > u64::from(w) {
                    problems.push(if x >= w {
                        format!("x={x} is past the right edge (x must be below {w})")
                    } else {
                        format!(
                            "x+width = {right} is past the right edge (with x={x}, width can be at most {})",
                            w - x
                        )
                    });
                }
                if bottom > u64::from(h) {
                    problems.push(if y >= h {
                        format!("y={y} is past the bottom edge (y must be below {h})")
                    } else {
                        format!(
                            "y+height = {bottom} is past the bottom edge (with y={y}, height can be at most {})",
                            h - y
                        )
                    });
                }
                if problems.is_empty() {
                    Ok((width, height))
                } else {
                    Err(ToolError::invalid(
                        "",
                        format!(
                            "the crop rectangle does not lie inside {shown}, which is {w}x{h} pixels: {}",
                            problems.join("; ")
                        ),
                    ))
                }
            }
            Op::Rotate(90 | 270) => Ok((h, w)),
            Op::Rotate(_) | Op::Convert => Ok((w, h)),
        }
    }

    /// The memory the edit takes beside the decoded input: the result, and for a resize the
    /// resampling buffer (the old width by the new height, 16 bytes a pixel).
    fn work_bytes(self, before: (u32, u32), after: (u32, u32), bytes_per_pixel: u8) -> u64 {
        let result = u64::from(after.0) * u64::from(after.1) * u64::from(bytes_per_pixel);
        let buffer = match self {
            Op::Resize { .. } => u64::from(before.0) * u64::from(after.1) * 16,
            _ => 0,
        };
        result + buffer
    }

    /// Applies the edit; `after` is what [`Op::result_dims`] returned for this image.
    fn apply(self, image: DynamicImage, after: (u32, u32)) -> DynamicImage {
        match self {
            Op::Resize { .. } => image.resize_exact(after.0, after.1, FilterType::Lanczos3),
            Op::Crop {
                x,
                y,
                width,
                height,
            } => image.crop_imm(x, y, width, height),
            Op::Rotate(90) => image.rotate90(),
            Op::Rotate(180) => image.rotate180(),
            Op::Rotate(_) => image.rotate270(),
            Op::Convert => image,
        }
    }

    /// The first half of the result sentence: `Resized photo.png 4000x3000 → 800x600`.
    fn summary(
        self,
        shown: &str,
        from: ImageFormat,
        to: ImageFormat,
        before: (u32, u32),
        after: (u32, u32),
    ) -> String {
        let dims = format!("{}x{} → {}x{}", before.0, before.1, after.0, after.1);
        let mut text = match self {
            Op::Resize { .. } => format!("Resized {shown} {dims}"),
            Op::Crop { x, y, .. } => format!("Cropped {shown} {dims} at ({x}, {y})"),
            Op::Rotate(d) => format!("Rotated {shown} {d}° clockwise, {dims}"),
            Op::Convert => format!(
                "Converted {shown} from {} to {} ({}x{})",
                from.label(),
                to.label(),
                before.0,
                before.1
            ),
        };
        if self != Op::Convert && from != to {
            text.push_str(&format!(" as {}", to.label()));
        }
        text
    }
}

/// `other * new / old`, rounded, at least 1.
fn scale(other: u32, new: u32, old: u32) -> u64 {
    let n = u64::from(other) * u64::from(new);
    let old = u64::from(old.max(1));
    ((n + old / 2) / old).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(action: Action) -> ImageEditArgs {
        ImageEditArgs {
            path: "img/photo.png".into(),
            action,
            width: None,
            height: None,
            x: None,
            y: None,
            degrees: None,
            format: None,
            output: None,
        }
    }

    #[test]
    fn arguments_are_checked_per_action() {
        type Case = (ImageEditArgs, Result<Op, &'static str>);
        let cases: Vec<Case> = vec![
            (
                ImageEditArgs {
                    width: Some(32),
                    ..args(Action::Resize)
                },
                Ok(Op::Resize {
                    width: Some(32),
                    height: None,
                }),
            ),
            (
                ImageEditArgs {
                    width: Some(0),
                    ..args(Action::Resize)
                },
                Err("between 1 and 16384 pixels, not 0"),
            ),
            (
                ImageEditArgs {
                    height: Some(16385),
                    ..args(Action::Resize)
                },
                Err("not 16385"),
            ),
            (args(Action::Resize), Err("resize needs `width`, `height`")),
            (
                ImageEditArgs {
                    width: Some(3),
                    degrees: Some(90),
                    ..args(Action::Resize)
                },
                Err("`degrees` applies only to rotate"),
            ),
            (
                ImageEditArgs {
                    width: Some(3),
                    ..args(Action::Crop)
                },
                Err("crop needs `width` and `height`"),
            ),
            (
                ImageEditArgs {
                    width: Some(3),
                    height: Some(4),
                    y: Some(1),
                    ..args(Action::Crop)
                },
                Ok(Op::Crop {
                    x: 0,
                    y: 1,
                    width: 3,
                    height: 4,
                }),
            ),
            (
                ImageEditArgs {
                    degrees: Some(45),
                    ..args(Action::Rotate)
                },
                Err("90, 180 or 270 (clockwise), not 45"),
            ),
            (args(Action::Rotate), Err("rotate needs `degrees`")),
            (
                ImageEditArgs {
                    degrees: Some(270),
                    x: Some(1),
                    ..args(Action::Rotate)
                },
                Err("`x` applies only to crop"),
            ),
            (
                args(Action::Convert),
                Err("convert needs `format`: png, jpeg"),
            ),
            (
                ImageEditArgs {
                    format: Some(ImageFormat::Webp),
                    width: Some(9),
                    ..args(Action::Convert)
                },
                Err("`width` applies only to resize and crop"),
            ),
        ];
        for (a, want) in cases {
            let got = Op::from_args(&a).map_err(|e| e.to_string());
            match (want, got) {
                (Ok(op), Ok(got)) => assert_eq!(got, op),
                (Err(s), Err(e)) => assert!(e.contains(s), "want {s:?} in {e:?}"),
                (want, got) => panic!("{:?}: want {want:?}, got {got:?}", a.action),
            }
        }
    }

    #[test]
    fn output_defaults() {
        let convert = |format, output: Option<&str>| ImageEditArgs {
            format: Some(format),
            output: output.map(Into::into),
            ..args(Action::Convert)
        };
        assert_eq!(output_path(&args(Action::Rotate)).unwrap(), "img/photo.png");
        assert_eq!(
            output_path(&convert(ImageFormat::Jpeg, None)).unwrap(),
            "img/photo.jpg"
        );
        assert_eq!(
            output_path(&convert(ImageFormat::Png, None)).unwrap(),
            "img/photo.png"
        );
        assert_eq!(
            output_path(&convert(ImageFormat::Webp, Some("out/x"))).unwrap(),
            "out/x"
        );
        let err = output_path(&convert(ImageFormat::Webp, Some("out/x.png")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("name the output `out/x.webp`"), "{err}");
    }

    #[test]
    fn sizes_follow_the_aspect_ratio_and_crops_stay_inside() {
        let r = |width, height| Op::Resize { width, height };
        let crop = |x, y, width, height| Op::Crop {
            x,
            y,
            width,
            height,
        };
        type Case = (Op, (u32, u32), Result<(u32, u32), &'static str>);
        let cases: Vec<Case> = vec![
            (r(Some(800), None), (4000, 3000), Ok((800, 600))),
            (r(None, Some(600)), (4000, 3000), Ok((800, 600))),
            (r(Some(10), Some(7)), (4000, 3000), Ok((10, 7))),
            (r(Some(1), None), (4000, 3), Ok((1, 1))),
            (r(Some(16384), None), (2, 100), Err("gives 16384x819200")),
            (crop(8, 4, 32, 16), (64, 48), Ok((32, 16))),
            (crop(0, 0, 64, 48), (64, 48), Ok((64, 48))),
            (
                crop(40, 0, 32, 16),
                (64, 48),
                Err(
                    "which is 64x48 pixels: x+width = 72 is past the right edge (with x=40, width can be at most 24)",
                ),
            ),
            (
                crop(0, 48, 1, 1),
                (64, 48),
                Err("y=48 is past the bottom edge"),
            ),
            (
                crop(u32::MAX, u32::MAX, 16384, 16384),
                (64, 48),
                Err("x=4294967295 is past the right edge"),
            ),
            (Op::Rotate(90), (64, 48), Ok((48, 64))),
            (Op::Rotate(180), (64, 48), Ok((64, 48))),
            (Op::Rotate(270), (64, 48), Ok((48, 64))),
            (Op::Convert, (64, 48), Ok((64, 48))),
        ];
        for (op, dims, want) in cases {
            let got = op.result_dims(dims, "p.png").map_err(|e| e.to_string());
            match (want, got) {
                (Ok(d), Ok(got)) => assert_eq!(got, d, "{op:?}"),
                (Err(s), Err(e)) => assert!(e.contains(s), "{op:?}: want {s:?} in {e:?}"),
                (want, got) => panic!("{op:?}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn working_memory_counts_the_resize_buffer() {
        let r = Op::Resize {
            width: Some(12000),
            height: None,
        };
        // 4000x3000 RGB to 12000x9000: 309 MiB of result plus 549 MiB of buffer.
        let work = r.work_bytes((4000, 3000), (12000, 9000), 3);
        assert_eq!(work, 12000 * 9000 * 3 + 4000 * 9000 * 16);
        assert!(work > MAX_WORK);
        // Downscaling the same photo is cheap.
        assert!(r.work_bytes((4000, 3000), (800, 600), 3) < 50 * 1024 * 1024);
        assert_eq!(
            Op::Rotate(90).work_bytes((64, 48), (48, 64), 4),
            64 * 48 * 4
        );
    }

    #[test]
    fn edits_produce_the_promised_size() {
        let img = DynamicImage::ImageRgb8(image::ImageBuffer::new(64, 48));
        for op in [
            Op::Resize {
                width: Some(32),
                height: None,
            },
            Op::Crop {
                x: 8,
                y: 4,
                width: 32,
                height: 16,
            },
            Op::Rotate(90),
            Op::Rotate(180),
            Op::Rotate(270),
            Op::Convert,
        ] {
            let after = op.result_dims((64, 48), "p").unwrap();
            let out = op.apply(img.clone(), after);
            assert_eq!((out.width(), out.height()), after, "{op:?}");
        }
    }
}
