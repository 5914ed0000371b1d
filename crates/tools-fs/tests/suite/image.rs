//! `image_info` and `image_edit` through the real stack (schema validation, policy, timeout,
//! truncation), on images made here with the `image` crate, and checked with std and the
//! `image` crate (never through the tool under test).
//!
//! The hostile table pairs every attack with a benign twin that differs only in the hostile
//! part, so a refusal is known to come from that part and not from a broken fixture.

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine;
use image::{DynamicImage, ImageBuffer, ImageFormat, ImageReader, Rgb, Rgba};
use serde_json::{Value, json};
use tempfile::TempDir;
use tool_core::{
    Content, Decision, ErrorKind, Limits, Policy, Registry, Stack, ToolContext, ToolError,
    ToolOutput, Workspace,
};

const SECRET: &str = "OUTSIDE-SECRET";

fn stack() -> Stack {
    let mut r = Registry::new();
    r.register_all(tools_fs::tools(&Default::default()))
        .expect("register");
    Stack::new(r)
}

fn context(ws: Workspace, policy: Policy, limits: Limits) -> ToolContext {
    ToolContext::new(ws, Arc::new(policy), Arc::new(limits))
}

/// A 64x48 RGB gradient.
fn gradient() -> DynamicImage {
    DynamicImage::ImageRgb8(ImageBuffer::from_fn(64, 48, |x, y| {
        Rgb([(x * 4) as u8, (y * 5) as u8, ((x + y) * 2) as u8])
    }))
}

fn encode(img: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, format).unwrap();
    out.into_inner()
}

fn png() -> Vec<u8> {
    encode(&gradient(), ImageFormat::Png)
}

fn jpeg() -> Vec<u8> {
    encode(&gradient(), ImageFormat::Jpeg)
}

/// CRC-32 (IEEE), as PNG chunks use it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffff_u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A real PNG whose IHDR claims `w`x`h`, with a valid CRC, so only the size is wrong.
fn png_claiming(w: u32, h: u32) -> Vec<u8> {
    let mut bytes = png();
    assert_eq!(&bytes[12..16], b"IHDR");
    bytes[16..20].copy_from_slice(&w.to_be_bytes());
    bytes[20..24].copy_from_slice(&h.to_be_bytes());
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    bytes
}

/// The 64x48 JPEG with an EXIF block saying "rotate 90° clockwise for display" (orientation 6).
fn jpeg_rotated_by_exif() -> Vec<u8> {
    let plain = jpeg();
    assert_eq!(&plain[..2], [0xff, 0xd8]);
    let mut exif = b"Exif\0\0MM\0\x2a\0\0\0\x08".to_vec();
    exif.extend_from_slice(&[0, 1]); // one IFD entry
    exif.extend_from_slice(&[0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0]); // Orientation = 6
    exif.extend_from_slice(&[0, 0, 0, 0]); // no next IFD
    let mut out = vec![0xff, 0xd8, 0xff, 0xe1];
    out.extend_from_slice(&((exif.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&exif);
    out.extend_from_slice(&plain[2..]);
    out
}

/// Decodes with the format detected from the content.
fn decode(bytes: &[u8]) -> (ImageFormat, DynamicImage) {
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .unwrap();
    let format = reader.format().expect("an image format");
    (format, reader.decode().unwrap())
}

/// A local workspace (`base/ws`) beside an `outside` directory holding a secret.
struct Fx {
    _dir: TempDir,
    base: PathBuf,
    root: PathBuf,
    stack: Stack,
    ctx: ToolContext,
}

impl Fx {
    fn new() -> Fx {
        Fx::with(Policy::supervised(), Limits::default())
    }

    fn with(policy: Policy, limits: Limits) -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("ws");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret"), SECRET).unwrap();
        let ctx = context(Workspace::local(&root).unwrap(), policy, limits);
        let fx = Fx {
            _dir: dir,
            base,
            root,
            stack: stack(),
            ctx,
        };
        fx.put("photo.png", &png());
        fx.put("photo.jpg", &jpeg());
        fx
    }

    fn put(&self, rel: &str, bytes: &[u8]) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    fn get(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.root.join(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
    }

    async fn call(&self, tool: &str, args: &Value) -> Result<ToolOutput, ToolError> {
        self.stack
            .call_json(tool, &args.to_string(), self.ctx.for_call())
            .await
    }

    fn assert_outside_intact(&self, case: &str) {
        let outside: Vec<_> = std::fs::read_dir(self.base.join("outside"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(outside, ["secret"], "{case}: something was written outside");
        assert_eq!(
            std::fs::read_to_string(self.base.join("outside/secret")).unwrap(),
            SECRET
        );
        let mut top: Vec<String> = std::fs::read_dir(&self.base)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        assert_eq!(
            top,
            ["outside", "ws"],
            "{case}: something beside the workspace"
        );
    }
}

fn image_part(out: &ToolOutput) -> (String, Vec<u8>) {
    let found = out.content.iter().find_map(|c| match c {
        Content::Image { mime_type, data } => Some((
            mime_type.clone(),
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap(),
        )),
        _ => None,
    });
    found.expect("an image part")
}

#[tokio::test]
async fn info_reports_format_size_and_colour_from_the_content() {
    let fx = Fx::new();
    let out = fx
        .call("image_info", &json!({"path": "photo.png"}))
        .await
        .unwrap();
    let size = fx.get("photo.png").len();
    let text = out.joined_text();
    assert!(
        text.starts_with("photo.png: PNG image, 64x48 pixels, RGB 8-bit, "),
        "{text}"
    );
    assert_eq!(out.content.len(), 1, "no image unless asked");
    let s = out.structured.unwrap();
    assert_eq!(
        (
            &s["format"],
            &s["mime_type"],
            &s["width"],
            &s["height"],
            &s["color_type"]
        ),
        (
            &json!("png"),
            &json!("image/png"),
            &json!(64),
            &json!(48),
            &json!("rgb8")
        )
    );
    assert_eq!(s["bytes"], size);
    assert_eq!(s["decodable"], true);

    // A JPEG named .png is reported as the JPEG it is.
    fx.put("liar.png", &jpeg());
    let out = fx
        .call("image_info", &json!({"path": "liar.png"}))
        .await
        .unwrap();
    assert!(out.joined_text().contains("liar.png: JPEG image"));
}

#[tokio::test]
async fn info_attaches_the_image_for_vision_models() {
    let fx = Fx::new();
    for (path, mime) in [("photo.png", "image/png"), ("photo.jpg", "image/jpeg")] {
        let out = fx
            .call("image_info", &json!({"path": path, "include_base64": true}))
            .await
            .unwrap();
        let (got_mime, data) = image_part(&out);
        assert_eq!(got_mime, mime);
        assert_eq!(data, fx.get(path), "{path}: the file's own bytes");
        assert!(
            out.joined_text()
                .ends_with(&format!("The image is attached ({mime})."))
        );
        assert_eq!(out.structured.unwrap()["attached"], true);
    }
}

#[tokio::test]
async fn resize_keeps_the_aspect_ratio_and_says_what_it_did() {
    let fx = Fx::new();
    let out = fx
        .call(
            "image_edit",
            &json!({"path": "photo.png", "action": "resize", "width": 32, "output": "out/small.png"}),
        )
        .await
        .unwrap();
    let written = fx.get("out/small.png");
    let text = out.joined_text();
    assert_eq!(
        text,
        "Resized photo.png 64x48 → 32x24, wrote out/small.png (1 KB)."
    );
    assert!((512..1536).contains(&written.len()), "{}", written.len());
    let (format, img) = decode(&written);
    assert_eq!(
        (format, img.width(), img.height()),
        (ImageFormat::Png, 32, 24)
    );
    let s = out.structured.unwrap();
    assert_eq!(s["after"], json!({"width": 32, "height": 24}));
    assert_eq!(s["created"], true);
    assert_eq!(fx.get("photo.png"), png(), "the input is untouched");

    // Height alone, in place, overwriting.
    let out = fx
        .call(
            "image_edit",
            &json!({"path": "photo.png", "action": "resize", "height": 12}),
        )
        .await
        .unwrap();
    assert!(
        out.joined_text()
            .contains("64x48 → 16x12, overwrote photo.png")
    );
    let (_, img) = decode(&fx.get("photo.png"));
    assert_eq!((img.width(), img.height()), (16, 12));
}

#[tokio::test]
async fn crop_rotate_and_convert() {
    let fx = Fx::new();
    let original = gradient().to_rgb8();

    fx.call(
        "image_edit",
        &json!({"path": "photo.png", "action": "crop", "x": 8, "y": 4, "width": 32, "height": 16, "output": "crop.png"}),
    )
    .await
    .unwrap();
    let (_, img) = decode(&fx.get("crop.png"));
    let img = img.to_rgb8();
    assert_eq!(img.dimensions(), (32, 16));
    assert_eq!(
        img.get_pixel(0, 0),
        original.get_pixel(8, 4),
        "PNG is exact"
    );
    assert_eq!(img.get_pixel(31, 15), original.get_pixel(39, 19));

    let out = fx
        .call(
            "image_edit",
            &json!({"path": "photo.png", "action": "rotate", "degrees": 90, "output": "rot.png"}),
        )
        .await
        .unwrap();
    assert!(
        out.joined_text()
            .starts_with("Rotated photo.png 90° clockwise, 64x48 → 48x64, wrote rot.png")
    );
    let (_, img) = decode(&fx.get("rot.png"));
    let img = img.to_rgb8();
    assert_eq!(img.dimensions(), (48, 64));
    // Clockwise: the old top-left corner is now the top-right one.
    assert_eq!(img.get_pixel(47, 0), original.get_pixel(0, 0));

    // Convert defaults to the same name with the new extension, and leaves the input alone.
    let out = fx
        .call(
            "image_edit",
            &json!({"path": "photo.png", "action": "convert", "format": "webp"}),
        )
        .await
        .unwrap();
    assert!(
        out.joined_text()
            .starts_with("Converted photo.png from PNG to WebP (64x48), wrote photo.webp (")
    );
    let (format, img) = decode(&fx.get("photo.webp"));
    assert_eq!(format, ImageFormat::WebP);
    assert_eq!(img.to_rgb8(), original, "WebP is written lossless");
    assert_eq!(fx.get("photo.png"), png());

    // The output's extension picks the format of a resize.
    fx.call(
        "image_edit",
        &json!({"path": "photo.png", "action": "resize", "width": 16, "output": "thumb.jpg"}),
    )
    .await
    .unwrap();
    assert_eq!(decode(&fx.get("thumb.jpg")).0, ImageFormat::Jpeg);

    // Transparency cannot go to JPEG; the result says so.
    let rgba = DynamicImage::ImageRgba8(ImageBuffer::from_pixel(8, 8, Rgba([9, 9, 9, 100])));
    fx.put("alpha.png", &encode(&rgba, ImageFormat::Png));
    let out = fx
        .call(
            "image_edit",
            &json!({"path": "alpha.png", "action": "convert", "format": "jpeg"}),
        )
        .await
        .unwrap();
    assert!(
        out.joined_text()
            .ends_with("JPEG dropped the transparency (JPEG has none).")
    );
    assert_eq!(decode(&fx.get("alpha.jpg")).0, ImageFormat::Jpeg);
}

#[tokio::test]
async fn the_exif_orientation_is_reported_and_applied() {
    let fx = Fx::new();
    fx.put("phone.jpg", &jpeg_rotated_by_exif());
    let out = fx
        .call("image_info", &json!({"path": "phone.jpg"}))
        .await
        .unwrap();
    let text = out.joined_text();
    assert!(
        text.contains("rotate 90° clockwise for display, so it shows as 48x64"),
        "{text}"
    );
    let s = out.structured.unwrap();
    assert_eq!((&s["width"], &s["display_width"]), (&json!(64), &json!(48)));

    let out = fx
        .call(
            "image_edit",
            &json!({"path": "phone.jpg", "action": "resize", "width": 24, "output": "small.png"}),
        )
        .await
        .unwrap();
    let text = out.joined_text();
    assert!(
        text.starts_with("Resized phone.jpg 48x64 → 24x32 as PNG"),
        "{text}"
    );
    assert!(text.contains("The EXIF orientation (rotate 90° clockwise) was applied first"));
    let (_, img) = decode(&fx.get("small.png"));
    assert_eq!((img.width(), img.height()), (24, 32));
}

#[tokio::test]
async fn hostile_inputs_are_refused_and_their_benign_twins_work() {
    let fx = Fx::new();
    std::os::unix::fs::symlink(fx.base.join("outside"), fx.root.join("escape")).unwrap();
    fx.put("bomb.png", &png_claiming(100_000, 100_000));
    fx.put("notes.png", b"these are my notes, not a picture\n");
    let outside = fx.base.join("outside/x.png");
    let outside = outside.to_str().unwrap();

    // (name, tool, hostile args, the refusal's kind and a phrase of it, benign twin)
    type Case = (
        &'static str,
        &'static str,
        Value,
        (ErrorKind, &'static str),
        Value,
    );
    let cases: Vec<Case> = vec![
        (
            "output climbs out with ..",
            "image_edit",
            json!({"path": "photo.png", "action": "rotate", "degrees": 180, "output": "../x.png"}),
            (ErrorKind::Denied, "contains `..`"),
            json!({"path": "photo.png", "action": "rotate", "degrees": 180, "output": "out/x.png"}),
        ),
        (
            "output is an absolute path outside",
            "image_edit",
            json!({"path": "photo.png", "action": "convert", "format": "png", "output": outside}),
            (ErrorKind::Denied, "is outside the workspace"),
            json!({"path": "photo.png", "action": "convert", "format": "png", "output": "x.png"}),
        ),
        (
            "output goes through a link that leads out",
            "image_edit",
            json!({"path": "photo.png", "action": "convert", "format": "png", "output": "escape/x.png"}),
            (ErrorKind::Denied, "outside the workspace"),
            json!({"path": "photo.png", "action": "convert", "format": "png", "output": "inside/x.png"}),
        ),
        (
            "input read through ..",
            "image_info",
            json!({"path": "../outside/secret"}),
            (ErrorKind::Denied, "contains `..`"),
            json!({"path": "photo.jpg"}),
        ),
        (
            "a header claiming 100000x100000 (edit)",
            "image_edit",
            json!({"path": "bomb.png", "action": "resize", "width": 32}),
            (
                ErrorKind::Failed,
                "claims 100000x100000 pixels, beyond the 16384-pixel limit per side",
            ),
            json!({"path": "photo.png", "action": "resize", "width": 32, "output": "r.png"}),
        ),
        (
            "a header claiming 100000x100000 (attach)",
            "image_info",
            json!({"path": "bomb.png", "include_base64": true}),
            (ErrorKind::Failed, "decompression bomb"),
            json!({"path": "photo.png", "include_base64": true}),
        ),
        (
            "crop outside the image",
            "image_edit",
            json!({"path": "photo.png", "action": "crop", "x": 40, "y": 40, "width": 32, "height": 16, "output": "c.png"}),
            (
                ErrorKind::InvalidArgs,
                "does not lie inside photo.png, which is 64x48 pixels",
            ),
            json!({"path": "photo.png", "action": "crop", "x": 32, "y": 32, "width": 32, "height": 16, "output": "c.png"}),
        ),
        (
            "a text file passed as an image (info)",
            "image_info",
            json!({"path": "notes.png"}),
            (
                ErrorKind::Failed,
                "it looks like text; read it with file_read",
            ),
            json!({"path": "photo.png"}),
        ),
        (
            "a text file passed as an image (edit)",
            "image_edit",
            json!({"path": "notes.png", "action": "rotate", "degrees": 90, "output": "n.png"}),
            (ErrorKind::Failed, "notes.png is not an image"),
            json!({"path": "photo.png", "action": "rotate", "degrees": 90, "output": "n.png"}),
        ),
        (
            "width 0",
            "image_edit",
            json!({"path": "photo.png", "action": "resize", "width": 0, "output": "w.png"}),
            (ErrorKind::InvalidArgs, "width"),
            json!({"path": "photo.png", "action": "resize", "width": 32, "output": "w.png"}),
        ),
        (
            "width past the limit",
            "image_edit",
            json!({"path": "photo.png", "action": "resize", "width": 16385, "output": "w.png"}),
            (ErrorKind::InvalidArgs, "width"),
            json!({"path": "photo.png", "action": "resize", "width": 16384, "height": 4, "output": "w.png"}),
        ),
        (
            "a result too big for memory",
            "image_edit",
            json!({"path": "photo.png", "action": "resize", "width": 16384, "height": 16384, "output": "w.png"}),
            (
                ErrorKind::InvalidArgs,
                "would take 784 MB of memory, beyond the 512 MB limit",
            ),
            json!({"path": "photo.png", "action": "resize", "width": 16384, "height": 2, "output": "w.png"}),
        ),
        (
            "degrees off the quarter turns",
            "image_edit",
            json!({"path": "photo.png", "action": "rotate", "degrees": 45, "output": "d.png"}),
            (ErrorKind::InvalidArgs, "90, 180 or 270"),
            json!({"path": "photo.png", "action": "rotate", "degrees": 270, "output": "d.png"}),
        ),
        (
            "convert without a format",
            "image_edit",
            json!({"path": "photo.png", "action": "convert", "output": "f.gif"}),
            (ErrorKind::InvalidArgs, "convert needs `format`"),
            json!({"path": "photo.png", "action": "convert", "format": "gif", "output": "f.gif"}),
        ),
        (
            "an unknown argument",
            "image_info",
            json!({"path": "photo.png", "pixels": true}),
            (ErrorKind::InvalidArgs, "pixels"),
            json!({"path": "photo.png", "include_base64": false}),
        ),
    ];

    for (name, tool, hostile, (kind, phrase), benign) in cases {
        let before_png = fx.get("photo.png");
        match fx.call(tool, &hostile).await {
            Err(e) => {
                let msg = e.to_string();
                assert_eq!(e.kind(), kind, "{name}: {msg}");
                assert!(msg.contains(phrase), "{name}: want {phrase:?} in {msg:?}");
            }
            Ok(out) => panic!("{name}: the hostile call succeeded: {}", out.joined_text()),
        }
        assert_eq!(fx.get("photo.png"), before_png, "{name}: input changed");
        fx.assert_outside_intact(name);
        let out = fx
            .call(tool, &benign)
            .await
            .unwrap_or_else(|e| panic!("{name}: the benign twin failed: {e}"));
        assert!(!out.joined_text().is_empty(), "{name}");
        if let Some(o) = benign.get("output").and_then(Value::as_str) {
            decode(&fx.get(o));
        }
        fx.assert_outside_intact(name);
    }
    // The twins that wrote left real images; the link's target got nothing.
    assert!(fx.root.join("inside/x.png").is_file());
    assert!(fx.root.join("out/x.png").is_file());
}

#[tokio::test]
async fn a_bomb_header_is_reported_by_info_without_decoding() {
    let fx = Fx::new();
    fx.put("bomb.png", &png_claiming(100_000, 100_000));
    let out = fx
        .call("image_info", &json!({"path": "bomb.png"}))
        .await
        .unwrap();
    let text = out.joined_text();
    assert!(text.contains("100000x100000 pixels"), "{text}");
    assert!(text.contains("It cannot be decoded"), "{text}");
    assert_eq!(out.structured.unwrap()["decodable"], false);

    // Within the side limit but not the memory limit: refused before any pixel is decoded.
    fx.put("wide.png", &png_claiming(16_000, 16_000));
    let err = fx
        .call(
            "image_edit",
            &json!({"path": "wide.png", "action": "rotate", "degrees": 90}),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("would take 732.4 MB of memory decoded"),
        "{err}"
    );
}

#[tokio::test]
async fn truncated_and_oversized_files_are_refused_with_a_next_step() {
    let fx = Fx::with(
        Policy::supervised(),
        Limits {
            max_file_bytes: 2000,
            ..Limits::default()
        },
    );
    let mut cut = png();
    cut.truncate(cut.len() / 2);
    fx.put("cut.png", &cut);
    let err = fx
        .call(
            "image_edit",
            &json!({"path": "cut.png", "action": "rotate", "degrees": 90}),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("cut.png starts like a PNG file"), "{err}");
    assert!(err.contains("re-create or re-download it"), "{err}");
    assert_eq!(fx.get("cut.png"), cut, "nothing was written");

    let big = encode(
        &DynamicImage::ImageRgb8(ImageBuffer::from_fn(64, 64, |x, y| {
            Rgb([(x * 37 + y * 11) as u8, (x * y) as u8, (y * 53) as u8])
        })),
        ImageFormat::Bmp,
    );
    assert!(big.len() > 2000);
    fx.put("big.bmp", &big);
    // Info needs only the header, read from the first 2 KB; attaching and editing need it all.
    let out = fx
        .call("image_info", &json!({"path": "big.bmp"}))
        .await
        .unwrap();
    assert!(
        out.joined_text()
            .starts_with("big.bmp: BMP image, 64x64 pixels")
    );
    assert_eq!(out.structured.unwrap()["bytes"], big.len());
    for (tool, args) in [
        (
            "image_info",
            json!({"path": "big.bmp", "include_base64": true}),
        ),
        (
            "image_edit",
            json!({"path": "big.bmp", "action": "rotate", "degrees": 90}),
        ),
    ] {
        let err = fx.call(tool, &args).await.unwrap_err().to_string();
        assert!(
            err.contains("more than the 2 KB that image tools read (limits.max_file_bytes)"),
            "{tool}: {err}"
        );
    }
    assert_eq!(fx.get("big.bmp"), big);
    // A non-image over the limit says both things.
    fx.put("big.txt", &vec![b'a'; 5000]);
    let err = fx
        .call("image_info", &json!({"path": "big.txt"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("only its first 2 KB were read") && err.contains("looks like text"),
        "{err}"
    );
}

#[tokio::test]
async fn the_policy_sees_the_output_as_a_write_and_the_input_as_a_read() {
    // Read-only: info runs, edit is refused before anything is read.
    let fx = Fx::with(Policy::read_only(), Limits::default());
    fx.call("image_info", &json!({"path": "photo.png"}))
        .await
        .unwrap();
    let err = fx
        .call(
            "image_edit",
            &json!({"path": "photo.png", "action": "rotate", "degrees": 90, "output": "r.png"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
    assert!(!fx.root.join("r.png").exists());

    // A deny rule on a directory stops writes there, not reads from it.
    let policy = Policy::supervised()
        .rule("write(locked/**)", Decision::Deny)
        .unwrap();
    let fx = Fx::with(policy, Limits::default());
    fx.put("locked/in.png", &png());
    let err = fx
        .call(
            "image_edit",
            &json!({"path": "photo.png", "action": "rotate", "degrees": 90, "output": "locked/r.png"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
    // In place on a locked file is a write there too.
    let err = fx
        .call(
            "image_edit",
            &json!({"path": "locked/in.png", "action": "rotate", "degrees": 90}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Denied, "{err}");
    fx.call(
        "image_edit",
        &json!({"path": "locked/in.png", "action": "rotate", "degrees": 90, "output": "free/r.png"}),
    )
    .await
    .unwrap();
    assert_eq!(fx.get("locked/in.png"), png());
}

#[tokio::test]
async fn works_on_the_sqlite_backend() {
    let dir = tempfile::tempdir().unwrap();
    let ws = tools_fs::sqlite_workspace(&dir.path().join("ws.db")).unwrap();
    let p = ws.resolve("pics/photo.png").unwrap();
    ws.write_atomic(&p, &png()).unwrap();
    let ctx = context(ws.clone(), Policy::supervised(), Limits::default());
    let stack = stack();
    let call = |tool: &'static str, args: Value| {
        let ctx = ctx.for_call();
        let stack = &stack;
        async move { stack.call_json(tool, &args.to_string(), ctx).await }
    };

    let out = call(
        "image_edit",
        json!({"path": "pics/photo.png", "action": "resize", "width": 32, "format": "jpeg"}),
    )
    .await
    .unwrap();
    assert!(
        out.joined_text()
            .starts_with("Resized pics/photo.png 64x48 → 32x24 as JPEG, wrote pics/photo.jpg ("),
        "{}",
        out.joined_text()
    );
    let written = ws
        .read_to_end(&ws.resolve("pics/photo.jpg").unwrap(), 1 << 20)
        .unwrap();
    let (format, img) = decode(&written);
    assert_eq!(
        (format, img.width(), img.height()),
        (ImageFormat::Jpeg, 32, 24)
    );

    let out = call(
        "image_info",
        json!({"path": "pics/photo.jpg", "include_base64": true}),
    )
    .await
    .unwrap();
    assert!(
        out.joined_text()
            .starts_with("pics/photo.jpg: JPEG image, 32x24 pixels")
    );
    assert_eq!(image_part(&out), ("image/jpeg".to_string(), written));

    let err = call(
        "image_edit",
        json!({"path": "pics/photo.png", "action": "crop", "width": 65, "height": 1}),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("which is 64x48 pixels"), "{err}");
    // Nothing appeared beside the database.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.iter().all(|n| n.starts_with("ws.db")), "{names:?}");
}
