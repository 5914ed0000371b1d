use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;
use tool_core::schemars::{self, JsonSchema};
use tool_core::{Access, Annotations, Tool, ToolContext, ToolError, ToolOutput, WsPath, blocking};
use xcap::image::imageops::{self, FilterType};
use xcap::image::{self, ExtendedColorType, ImageEncoder, RgbaImage};

use crate::config::Config;

/// The largest region side accepted, in pixels.
pub const SCREENSHOT_MAX_SIDE: u32 = 16_384;

/// A rectangle in pixels, relative to the top-left corner of the monitor or window captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Left edge, in pixels from the left of the monitor or window.
    pub x: u32,
    /// Top edge, in pixels from the top of the monitor or window.
    pub y: u32,
    /// Width in pixels, 1..=16384.
    pub width: u32,
    /// Height in pixels, 1..=16384.
    pub height: u32,
}

/// Arguments of `screenshot`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScreenshotArgs {
    /// Which monitor to capture, counting from 0 (default: the primary monitor, or the first).
    /// Not together with `window_title`.
    pub monitor: Option<u32>,
    /// Capture the window with this title: an exact match, or else the one window whose title
    /// contains it (ignoring case).
    pub window_title: Option<String>,
    /// Capture only this rectangle of the monitor or window.
    pub region: Option<Region>,
    /// Save the PNG, at full resolution, to this new file in the workspace (must end in .png;
    /// an existing file is not overwritten).
    pub path: Option<String>,
    /// Return the image to you as image content (default true), scaled down to the configured
    /// maximum width.
    pub return_image: Option<bool>,
}

#[derive(Debug, Clone)]
enum Source {
    Monitor(Option<u32>),
    Window(String),
}

#[derive(Debug, Clone)]
struct Plan {
    source: Source,
    region: Option<Region>,
    path: Option<WsPath>,
    return_image: bool,
}

/// The store name screen capture declares (`Access::State`), so that per-tool rules apply.
pub(crate) const SCREEN_STATE: &str = "screen";

/// `screenshot`: capture a monitor, a window or a region as PNG.
#[derive(Debug, Clone)]
pub struct Screenshot {
    config: Arc<Config>,
}

impl Screenshot {
    pub(crate) fn new(config: Arc<Config>) -> Self {
        Screenshot { config }
    }
}

fn plan(ctx: &ToolContext, args: &ScreenshotArgs) -> Result<Plan, ToolError> {
    let source = match (&args.window_title, args.monitor) {
        (Some(_), Some(_)) => {
            return Err(ToolError::invalid(
                "/window_title",
                "give either `monitor` or `window_title`, not both",
            ));
        }
        (Some(title), None) => {
            if title.trim().is_empty() || title.chars().count() > 256 {
                return Err(ToolError::invalid(
                    "/window_title",
                    "`window_title` must be 1 to 256 characters of the window's title",
                ));
            }
            if let Some(c) = title.chars().find(|c| c.is_control()) {
                return Err(ToolError::invalid(
                    "/window_title",
                    format!(
                        "`window_title` contains the control character {c:?}; give the title as shown"
                    ),
                ));
            }
            Source::Window(title.clone())
        }
        (None, m) => Source::Monitor(m),
    };
    if let Some(r) = &args.region {
        for (field, v) in [("width", r.width), ("height", r.height)] {
            if !(1..=SCREENSHOT_MAX_SIDE).contains(&v) {
                return Err(ToolError::invalid(
                    format!("/region/{field}"),
                    format!("`region.{field}` is {v}; give 1 to {SCREENSHOT_MAX_SIDE} pixels"),
                ));
            }
        }
        if r.x.checked_add(r.width).is_none_or(|e| e > 65_535)
            || r.y.checked_add(r.height).is_none_or(|e| e > 65_535)
        {
            return Err(ToolError::invalid(
                "/region",
                "the region reaches past 65535 pixels; give a region inside the monitor or window",
            ));
        }
    }
    let path = match &args.path {
        None => None,
        Some(p) => {
            let lower = p.to_ascii_lowercase();
            if !lower.ends_with(".png") || lower == ".png" || lower.ends_with("/.png") {
                return Err(ToolError::invalid(
                    "/path",
                    format!(
                        "`path` is {p:?}; give a file name ending in .png, e.g. screenshots/screen.png"
                    ),
                ));
            }
            let ws = ctx.workspace.resolve(p)?;
            if ws.is_root() {
                return Err(ToolError::invalid("/path", "`path` must name a file"));
            }
            Some(ws)
        }
    };
    let return_image = args.return_image.unwrap_or(true);
    if !return_image && path.is_none() {
        return Err(ToolError::invalid(
            "/return_image",
            "with return_image false and no `path` the screenshot would go nowhere; give a path, or leave return_image out",
        ));
    }
    Ok(Plan {
        source,
        region: args.region,
        path,
        return_image,
    })
}

#[async_trait]
impl Tool for Screenshot {
    const NAME: &'static str = "screenshot";
    type Args = ScreenshotArgs;

    fn description(&self) -> String {
        format!(
            "Capture the screen as PNG: a whole monitor (default), a window by its title, or a \
             region of either. The image comes back to you (scaled down to at most {} pixels \
             wide) and/or is saved at full resolution to a new .png file in the workspace.",
            self.config.screenshot_max_width
        )
    }

    fn annotations(&self) -> Annotations {
        // It creates files, but never overwrites one.
        Annotations::ADDITIVE.open_world(false)
    }

    fn access(&self, ctx: &ToolContext, args: &Self::Args) -> Result<Vec<Access>, ToolError> {
        let plan = plan(ctx, args)?;
        let mut accesses = vec![Access::State {
            store: SCREEN_STATE.into(),
            write: false,
        }];
        if let Some(p) = plan.path {
            accesses.push(Access::Write(p));
        }
        Ok(accesses)
    }

    async fn call(&self, ctx: &ToolContext, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let plan = plan(ctx, &args)?;
        let display = display_name().ok_or_else(|| {
            ToolError::Failed(
                "There is no display to capture: neither DISPLAY nor WAYLAND_DISPLAY is set. Run Toolshed inside a graphical session, or start a virtual display (e.g. `Xvfb :99` and DISPLAY=:99).".into(),
            )
        })?;
        if let Some(p) = &plan.path
            && ctx.workspace.exists(p)?
        {
            return Err(ToolError::Failed(format!(
                "{p} already exists and screenshots never overwrite a file; choose a new name."
            )));
        }
        let max_width = self.config.screenshot_max_width;
        let capture_plan = plan.clone();
        let (image, what) = blocking(ctx, move || capture(&capture_plan, &display)).await?;
        let (width, height) = image.dimensions();
        let workspace = ctx.workspace.clone();
        let path = plan.path.clone();
        let return_image = plan.return_image;
        let (saved, returned) = blocking(ctx, move || {
            let saved = match &path {
                Some(p) => {
                    let png = encode_png(&image)?;
                    workspace.write_atomic(p, &png)?;
                    Some(png.len())
                }
                None => None,
            };
            let returned = if return_image {
                let scaled = scale_to_width(&image, max_width);
                let png = encode_png(&scaled)?;
                Some((scaled.width(), scaled.height(), png))
            } else {
                None
            };
            Ok((saved, returned))
        })
        .await?;

        let mut text = format!("Captured {what} ({width}x{height})");
        let mut structured = json!({
            "source": what,
            "width": width,
            "height": height,
        });
        if let (Some(p), Some(bytes)) = (&plan.path, saved) {
            text.push_str(&format!("; saved to {p} ({bytes} bytes)"));
            structured["path"] = json!(p.to_string());
            structured["bytes"] = json!(bytes);
        }
        let mut out_image = None;
        if let Some((w, h, png)) = returned {
            if w != width {
                text.push_str(&format!("; returned scaled to {w}x{h}"));
            }
            structured["returned_width"] = json!(w);
            structured["returned_height"] = json!(h);
            out_image = Some(base64::engine::general_purpose::STANDARD.encode(png));
        }
        text.push('.');
        let mut out = ToolOutput::text(text).with_structured(structured);
        if let Some(data) = out_image {
            out = out.with_image("image/png", data);
        }
        Ok(out)
    }
}

/// The display to capture, if the environment names one.
fn display_name() -> Option<String> {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.trim().is_empty())
}

fn xcap_error(display: &str, e: xcap::XCapError) -> ToolError {
    ToolError::Failed(format!(
        "Could not capture the screen of display {display}: {e}. Check that the display is running and reachable (DISPLAY or WAYLAND_DISPLAY), then try again."
    ))
}

/// Captures the source (and region) described by `plan`; says what it captured.
fn capture(plan: &Plan, display: &str) -> Result<(RgbaImage, String), ToolError> {
    let err = |e| xcap_error(display, e);
    match &plan.source {
        Source::Monitor(index) => {
            let monitors = xcap::Monitor::all().map_err(err)?;
            if monitors.is_empty() {
                return Err(ToolError::Failed(format!(
                    "Display {display} reports no monitors, so there is nothing to capture."
                )));
            }
            let i = match index {
                Some(i) => {
                    let i = *i as usize;
                    if i >= monitors.len() {
                        return Err(ToolError::invalid(
                            "/monitor",
                            format!(
                                "`monitor` is {i}, but display {display} has {} monitor(s), numbered from 0",
                                monitors.len()
                            ),
                        ));
                    }
                    i
                }
                None => monitors
                    .iter()
                    .position(|m| m.is_primary().unwrap_or(false))
                    .unwrap_or(0),
            };
            let m = &monitors[i];
            let (w, h) = (m.width().map_err(err)?, m.height().map_err(err)?);
            let name = m.name().unwrap_or_default();
            let what = format!("monitor {i} ({name})");
            let image = match plan.region {
                Some(r) => {
                    check_region(&r, w, h, &what)?;
                    m.capture_region(r.x, r.y, r.width, r.height).map_err(err)?
                }
                None => m.capture_image().map_err(err)?,
            };
            let what = match plan.region {
                Some(r) => format!("region {}x{}+{}+{} of {what}", r.width, r.height, r.x, r.y),
                None => what,
            };
            Ok((image, what))
        }
        Source::Window(title) => {
            let windows = xcap::Window::all().map_err(err)?;
            let mut titled: Vec<(xcap::Window, String)> = windows
                .into_iter()
                .filter(|w| !w.is_minimized().unwrap_or(false))
                .filter_map(|w| w.title().ok().map(|t| (w, t)))
                .collect();
            let exact: Vec<usize> = (0..titled.len())
                .filter(|&i| titled[i].1 == *title)
                .collect();
            let lower = title.to_lowercase();
            let chosen = if exact.len() == 1 {
                exact[0]
            } else {
                let close: Vec<usize> = (0..titled.len())
                    .filter(|&i| titled[i].1.to_lowercase().contains(&lower))
                    .collect();
                match close.as_slice() {
                    [one] => *one,
                    [] => {
                        let mut names: Vec<&str> = titled
                            .iter()
                            .map(|(_, t)| t.as_str())
                            .filter(|t| !t.is_empty())
                            .collect();
                        names.truncate(30);
                        return Err(ToolError::NotFound(format!(
                            "No window's title contains {title:?}; the windows on display {display} are: {}. Call again with one of these titles, or capture the monitor.",
                            if names.is_empty() {
                                "none".to_string()
                            } else {
                                names
                                    .iter()
                                    .map(|n| format!("{n:?}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            }
                        )));
                    }
                    many => {
                        let names: Vec<String> =
                            many.iter().map(|&i| format!("{:?}", titled[i].1)).collect();
                        return Err(ToolError::invalid(
                            "/window_title",
                            format!(
                                "{} windows match {title:?}: {}; give the whole title of one",
                                many.len(),
                                names.join(", ")
                            ),
                        ));
                    }
                }
            };
            let (window, name) = titled.swap_remove(chosen);
            let (w, h) = (window.width().map_err(err)?, window.height().map_err(err)?);
            let what = format!("window {name:?}");
            if let Some(r) = &plan.region {
                check_region(r, w, h, &what)?;
            }
            let image = window.capture_image().map_err(err)?;
            let image = match plan.region {
                Some(r) => {
                    // The window may have been resized between the check and the capture.
                    check_region(&r, image.width(), image.height(), &what)?;
                    imageops::crop_imm(&image, r.x, r.y, r.width, r.height).to_image()
                }
                None => image,
            };
            let what = match plan.region {
                Some(r) => format!("region {}x{}+{}+{} of {what}", r.width, r.height, r.x, r.y),
                None => what,
            };
            Ok((image, what))
        }
    }
}

fn check_region(r: &Region, width: u32, height: u32, what: &str) -> Result<(), ToolError> {
    let inside = r.x.checked_add(r.width).is_some_and(|e| e <= width)
        && r.y.checked_add(r.height).is_some_and(|e| e <= height);
    if inside {
        Ok(())
    } else {
        Err(ToolError::invalid(
            "/region",
            format!(
                "the region {}x{} at ({}, {}) reaches outside {what}, which is {width}x{height}; give a region inside it",
                r.width, r.height, r.x, r.y
            ),
        ))
    }
}

/// Scales `image` down to `max_width` (keeping the aspect ratio) when it is wider.
fn scale_to_width(image: &RgbaImage, max_width: u32) -> RgbaImage {
    let (w, h) = image.dimensions();
    if w <= max_width {
        return image.clone();
    }
    let new_h = ((u64::from(h) * u64::from(max_width) + u64::from(w) / 2) / u64::from(w)).max(1);
    imageops::resize(image, max_width, new_h as u32, FilterType::Triangle)
}

fn encode_png(image: &RgbaImage) -> Result<Vec<u8>, ToolError> {
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(
            image.as_raw(),
            image.width(),
            image.height(),
            ExtendedColorType::Rgba8,
        )
        .map_err(ToolError::internal)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_keeps_the_aspect_ratio_and_never_enlarges() {
        let img = RgbaImage::from_pixel(320, 240, image::Rgba([255, 0, 0, 255]));
        assert_eq!(scale_to_width(&img, 160).dimensions(), (160, 120));
        assert_eq!(scale_to_width(&img, 1280).dimensions(), (320, 240));
        let tall = RgbaImage::new(1000, 1);
        assert_eq!(scale_to_width(&tall, 16).dimensions(), (16, 1));
    }

    #[test]
    fn regions_must_lie_inside() {
        let r = |x, y, width, height| Region {
            x,
            y,
            width,
            height,
        };
        assert!(check_region(&r(0, 0, 320, 240), 320, 240, "m").is_ok());
        assert!(check_region(&r(1, 0, 320, 240), 320, 240, "m").is_err());
        assert!(check_region(&r(0, 240, 1, 1), 320, 240, "m").is_err());
        assert!(check_region(&r(u32::MAX, 0, 2, 1), 320, 240, "m").is_err());
    }
}
