//! screenshot: under a real Xvfb started by the test, with a known red root window and a known
//! green window drawn with x11rb; pixels are checked, not just files. Without the `screenshot`
//! feature the tool is not registered and these tests say so.
//!
//! xcap reads the display from the environment, which a test cannot set for itself (setting
//! variables in a running multi-threaded process is unsafe), so each parent test starts Xvfb,
//! draws, and runs the `child_*` tests in a child process of this binary with DISPLAY set.

#[cfg(not(feature = "screenshot"))]
#[test]
fn screenshot_is_not_registered_without_the_feature() {
    println!(
        "skipped: the screenshot feature is off, so the Xvfb tests do not run; run `cargo test -p tools-hw --features screenshot`"
    );
    let tools = tools_hw::tools(&tools_hw::Config::new());
    assert!(tools.iter().all(|t| t.spec().name != "screenshot"));
    assert!(tools.iter().any(|t| t.spec().name == "hardware_info"));
}

#[cfg(feature = "screenshot")]
mod xvfb {
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use base64::Engine as _;
    use serde_json::{Value, json};
    use tool_core::{Content, ErrorKind, Policy, ToolOutput};
    use tools_hw::Config;
    use x11rb::connection::Connection;
    use x11rb::protocol::xproto::{
        AtomEnum, ChangeWindowAttributesAux, ConnectionExt as _, CreateWindowAux, PropMode,
        WindowClass,
    };
    use x11rb::rust_connection::RustConnection;
    use x11rb::wrapper::ConnectionExt as _;
    use xcap::image::{self, Rgba, RgbaImage};

    use super::super::{FakeDevices, Fixture, in_child, run_child};

    const RED: Rgba<u8> = Rgba([255, 0, 0, 255]);
    const GREEN: Rgba<u8> = Rgba([0, 255, 0, 255]);
    /// The test window: at (50, 40), 100x80, green.
    const WIN: (u32, u32, u32, u32) = (50, 40, 100, 80);
    const TITLE: &str = "Toolshed test window";

    /// A running Xvfb (killed on drop) with its display name.
    struct Xvfb {
        child: Child,
        display: String,
    }

    impl Drop for Xvfb {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Starts `Xvfb -displayfd 1`: the server picks a free display number itself and prints it,
    /// so parallel tests never collide. Fails loudly when Xvfb is missing.
    fn start_xvfb() -> Xvfb {
        let mut child = Command::new("Xvfb")
            // -noreset: the server must not reset when xcap's short-lived connections close.
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "320x240x24",
                "-nolisten",
                "tcp",
                "-noreset",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start Xvfb ({e}); install it (Debian: apt-get install xvfb)")
            });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let n: u32 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("Xvfb printed {line:?} instead of a display number"));
        Xvfb {
            child,
            display: format!(":{n}"),
        }
    }

    fn connect(display: &str) -> (RustConnection, usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match x11rb::connect(Some(display)) {
                Ok(c) => return c,
                Err(e) if Instant::now() > deadline => panic!("cannot connect to {display}: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Paints the root window red and maps a green, titled window; lists it on the root window
    /// the way a window manager would (Xvfb runs none). The window lives as long as the
    /// returned connection.
    fn draw(display: &str) -> RustConnection {
        let (conn, screen_num) = connect(display);
        let screen = conn.setup().roots[screen_num].clone();
        conn.change_window_attributes(
            screen.root,
            &ChangeWindowAttributesAux::new().background_pixel(0xff0000),
        )
        .unwrap();
        conn.clear_area(false, screen.root, 0, 0, 0, 0).unwrap();
        let win = conn.generate_id().unwrap();
        let (x, y, w, h) = WIN;
        conn.create_window(
            x11rb::COPY_DEPTH_FROM_PARENT,
            win,
            screen.root,
            x as i16,
            y as i16,
            w as u16,
            h as u16,
            0,
            WindowClass::INPUT_OUTPUT,
            0,
            &CreateWindowAux::new()
                .background_pixel(0x00ff00)
                .override_redirect(1),
        )
        .unwrap();
        let atom = |name: &str| {
            conn.intern_atom(false, name.as_bytes())
                .unwrap()
                .reply()
                .unwrap()
                .atom
        };
        let (net_wm_name, utf8) = (atom("_NET_WM_NAME"), atom("UTF8_STRING"));
        conn.change_property8(PropMode::REPLACE, win, net_wm_name, utf8, TITLE.as_bytes())
            .unwrap();
        conn.change_property8(
            PropMode::REPLACE,
            win,
            AtomEnum::WM_NAME,
            AtomEnum::STRING,
            TITLE.as_bytes(),
        )
        .unwrap();
        conn.map_window(win).unwrap();
        let stacking = atom("_NET_CLIENT_LIST_STACKING");
        conn.change_property32(
            PropMode::REPLACE,
            screen.root,
            stacking,
            AtomEnum::WINDOW,
            &[win],
        )
        .unwrap();
        // A round trip: everything above has been processed once it returns.
        conn.get_input_focus().unwrap().reply().unwrap();
        conn.flush().unwrap();
        conn
    }

    /// The expected colour of screen pixel (x, y).
    fn expected(x: u32, y: u32) -> Rgba<u8> {
        let (wx, wy, ww, wh) = WIN;
        if (wx..wx + ww).contains(&x) && (wy..wy + wh).contains(&y) {
            GREEN
        } else {
            RED
        }
    }

    /// The image content of an output, decoded.
    fn returned(out: &ToolOutput) -> RgbaImage {
        let data = out
            .content
            .iter()
            .find_map(|c| match c {
                Content::Image { mime_type, data } if mime_type == "image/png" => Some(data),
                _ => None,
            })
            .expect("no PNG image content");
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        image::load_from_memory_with_format(&png, image::ImageFormat::Png)
            .unwrap()
            .to_rgba8()
    }

    fn fixture(config: Config) -> Fixture {
        Fixture::new(config, FakeDevices::new(&[], &[]), Policy::supervised())
    }

    /// Every pixel of `img`, taken at offset (ox, oy) of the screen, has the expected colour.
    fn assert_screen_pixels(img: &RgbaImage, ox: u32, oy: u32) {
        for (x, y, p) in img.enumerate_pixels() {
            assert_eq!(
                *p,
                expected(ox + x, oy + y),
                "pixel ({x}, {y}) at offset ({ox}, {oy})"
            );
        }
    }

    #[test]
    fn captures_under_xvfb() {
        let xvfb = start_xvfb();
        let _window = draw(&xvfb.display);
        run_children("suite::screenshot::xvfb::child_capture_", 6, &xvfb.display);
    }

    fn run_children(prefix: &str, count: usize, display: &str) {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([prefix, "--ignored", "--test-threads=1", "--nocapture"])
            .env(super::super::CHILD, "1")
            .env("DISPLAY", display)
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("XDG_SESSION_TYPE")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && text.contains(&format!("test result: ok. {count} passed")),
            "child tests {prefix}* failed:\n{text}"
        );
    }

    #[tokio::test]
    #[ignore = "runs in a child process with DISPLAY set to a test Xvfb"]
    async fn child_capture_whole_monitor() {
        if !in_child("captures_under_xvfb") {
            return;
        }
        let f = fixture(Config::new());
        let out = f
            .ok("screenshot", &json!({"path": "shots/screen.png"}))
            .await;
        let img = returned(&out);
        assert_eq!(img.dimensions(), (320, 240));
        assert_screen_pixels(&img, 0, 0);
        // The saved file holds the same pixels.
        let saved = image::open(f.ws().join("shots/screen.png"))
            .unwrap()
            .to_rgba8();
        assert_eq!(saved, img);
        let s = out.structured.unwrap();
        assert_eq!(s["path"], json!("shots/screen.png"));
        assert_eq!(s["width"], json!(320));

        // The same name again: refused, the file kept.
        let e = f
            .err("screenshot", &json!({"path": "shots/screen.png"}))
            .await;
        assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
        assert!(e.to_string().contains("never overwrite"), "{e}");
    }

    #[tokio::test]
    #[ignore = "runs in a child process with DISPLAY set to a test Xvfb"]
    async fn child_capture_scaled_to_the_max_width() {
        if !in_child("captures_under_xvfb") {
            return;
        }
        let f = fixture(Config::new().with_screenshot_max_width(160));
        let out = f
            .ok("screenshot", &json!({"monitor": 0, "path": "full.png"}))
            .await;
        let small = returned(&out);
        assert_eq!(small.dimensions(), (160, 120));
        // Away from the window's edges (where scaling blends), the colours hold.
        for (x, y, p) in small.enumerate_pixels() {
            let (sx, sy) = (x * 2, y * 2);
            let near_edge = [WIN.0, WIN.0 + WIN.2].iter().any(|e| sx.abs_diff(*e) <= 3)
                || [WIN.1, WIN.1 + WIN.3].iter().any(|e| sy.abs_diff(*e) <= 3);
            if !near_edge {
                assert_eq!(*p, expected(sx, sy), "scaled pixel ({x}, {y})");
            }
        }
        // The saved file keeps the full resolution.
        let full = image::open(f.ws().join("full.png")).unwrap().to_rgba8();
        assert_eq!(full.dimensions(), (320, 240));
        assert!(out.joined_text().contains("returned scaled to 160x120"));
    }

    #[tokio::test]
    #[ignore = "runs in a child process with DISPLAY set to a test Xvfb"]
    async fn child_capture_window_by_title() {
        if !in_child("captures_under_xvfb") {
            return;
        }
        let f = fixture(Config::new());
        for title in [TITLE, "toolshed TEST"] {
            let out = f.ok("screenshot", &json!({"window_title": title})).await;
            let img = returned(&out);
            assert_eq!(img.dimensions(), (WIN.2, WIN.3), "{title}");
            assert!(img.pixels().all(|p| *p == GREEN), "{title}: not all green");
        }
        let out = f
            .ok(
                "screenshot",
                &json!({"window_title": TITLE, "region": {"x": 90, "y": 70, "width": 10, "height": 10}}),
            )
            .await;
        let img = returned(&out);
        assert_eq!(img.dimensions(), (10, 10));
        assert!(img.pixels().all(|p| *p == GREEN));

        let e = f
            .err("screenshot", &json!({"window_title": "no such window"}))
            .await;
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        assert!(e.to_string().contains(TITLE), "{e}");
        let e = f
            .err(
                "screenshot",
                &json!({"window_title": TITLE, "region": {"x": 95, "y": 0, "width": 10, "height": 10}}),
            )
            .await;
        assert_eq!(e.kind(), ErrorKind::InvalidArgs, "{e}");
        assert!(e.to_string().contains("which is 100x80"), "{e}");
    }

    #[tokio::test]
    #[ignore = "runs in a child process with DISPLAY set to a test Xvfb"]
    async fn child_capture_region_crops_exactly() {
        if !in_child("captures_under_xvfb") {
            return;
        }
        let f = fixture(Config::new());
        // Straddles the window's top-left corner: red and green in known places.
        let (x, y) = (40, 30);
        let out = f
            .ok(
                "screenshot",
                &json!({"region": {"x": x, "y": y, "width": 25, "height": 20}, "path": "crop.png"}),
            )
            .await;
        let img = returned(&out);
        assert_eq!(img.dimensions(), (25, 20));
        assert_screen_pixels(&img, x, y);
        assert!(img.pixels().any(|p| *p == RED) && img.pixels().any(|p| *p == GREEN));
        let saved = image::open(f.ws().join("crop.png")).unwrap().to_rgba8();
        assert_eq!(saved, img);
        // The last pixel row and column of the screen.
        let out = f
            .ok(
                "screenshot",
                &json!({"region": {"x": 319, "y": 239, "width": 1, "height": 1}}),
            )
            .await;
        assert_eq!(returned(&out).get_pixel(0, 0), &RED);
    }

    #[tokio::test]
    #[ignore = "runs in a child process with DISPLAY set to a test Xvfb"]
    async fn child_capture_refuses_bad_arguments_before_capturing() {
        use ErrorKind::{Denied, InvalidArgs};
        if !in_child("captures_under_xvfb") {
            return;
        }
        let f = fixture(Config::new());
        let rows: Vec<(Value, ErrorKind, &str)> = vec![
            (
                json!({"region": {"x": 300, "y": 0, "width": 21, "height": 10}}),
                InvalidArgs,
                "reaches outside",
            ),
            (
                json!({"region": {"x": 0, "y": 0, "width": 0, "height": 10}}),
                InvalidArgs,
                "region.width",
            ),
            (
                json!({"region": {"x": 0, "y": 0, "width": 20000, "height": 10}}),
                InvalidArgs,
                "region.width",
            ),
            (
                json!({"region": {"x": 4294967295u32, "y": 0, "width": 2, "height": 1}}),
                InvalidArgs,
                "65535",
            ),
            (json!({"monitor": 1}), InvalidArgs, "has 1 monitor(s)"),
            (
                json!({"monitor": 0, "window_title": TITLE}),
                InvalidArgs,
                "not both",
            ),
            (json!({"window_title": ""}), InvalidArgs, "1 to 256"),
            (
                json!({"window_title": "a\u{7}b"}),
                InvalidArgs,
                "control character",
            ),
            (json!({"path": "../escape.png"}), Denied, ".."),
            (
                json!({"path": "/etc/evil.png"}),
                Denied,
                "outside the workspace",
            ),
            (json!({"path": "notes.txt"}), InvalidArgs, "ending in .png"),
            (json!({"path": ".png"}), InvalidArgs, "ending in .png"),
            (json!({"return_image": false}), InvalidArgs, "go nowhere"),
            (json!({"format": "jpeg"}), InvalidArgs, "format"),
        ];
        for (args, kind, text) in &rows {
            let e = f.err("screenshot", args).await;
            assert_eq!(e.kind(), *kind, "{args}: {e}");
            assert!(e.to_string().contains(text), "{args}: {e}");
        }
        // Benign twins.
        f.ok(
            "screenshot",
            &json!({"region": {"x": 300, "y": 0, "width": 20, "height": 10}}),
        )
        .await;
        let out = f
            .ok(
                "screenshot",
                &json!({"path": "only-file.png", "return_image": false}),
            )
            .await;
        assert!(
            out.content
                .iter()
                .all(|c| !matches!(c, Content::Image { .. }))
        );
        assert!(f.ws().join("only-file.png").exists());
        assert!(!f.dir.path().join("escape.png").exists());
    }

    #[tokio::test]
    #[ignore = "runs in a child process with DISPLAY set to a test Xvfb"]
    async fn child_capture_read_only_policy_refuses_the_file_not_the_image() {
        if !in_child("captures_under_xvfb") {
            return;
        }
        let f = Fixture::new(
            Config::new(),
            FakeDevices::new(&[], &[]),
            Policy::read_only(),
        );
        let out = f.ok("screenshot", &json!({})).await;
        assert_eq!(returned(&out).dimensions(), (320, 240));
        let e = f.err("screenshot", &json!({"path": "x.png"})).await;
        assert_eq!(e.kind(), ErrorKind::Denied, "{e}");
    }

    #[test]
    fn no_display_is_reported_cleanly() {
        run_child(
            "suite::screenshot::xvfb::child_no_display",
            &[],
            &["DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE"],
        );
        // A display that names no running server: an error sentence, not a panic.
        let xvfb = start_xvfb();
        let dead = format!("{}9", xvfb.display);
        drop(xvfb);
        run_child(
            "suite::screenshot::xvfb::child_dead_display",
            &[("DISPLAY", dead.as_ref())],
            &["WAYLAND_DISPLAY", "XDG_SESSION_TYPE"],
        );
    }

    #[tokio::test]
    #[ignore = "runs in a child process without DISPLAY"]
    async fn child_no_display() {
        if !in_child("no_display_is_reported_cleanly") {
            return;
        }
        let f = fixture(Config::new());
        let e = f.err("screenshot", &json!({"path": "x.png"})).await;
        assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
        assert!(
            e.to_string().contains("There is no display to capture"),
            "{e}"
        );
        assert!(!f.ws().join("x.png").exists());
    }

    #[tokio::test]
    #[ignore = "runs in a child process with DISPLAY naming no server"]
    async fn child_dead_display() {
        if !in_child("no_display_is_reported_cleanly") {
            return;
        }
        let f = fixture(Config::new());
        let e = f.err("screenshot", &json!({})).await;
        assert_eq!(e.kind(), ErrorKind::Failed, "{e}");
        assert!(
            e.to_string()
                .contains("Could not capture the screen of display"),
            "{e}"
        );
    }
}
