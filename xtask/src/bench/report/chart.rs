//! PNG bar charts of toolshed against the reference, one bar pair per row of a bench.

use std::path::Path;

use anyhow::Context as _;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Row, value_text};

const OURS: RGBColor = RGBColor(38, 110, 200);
const REFERENCE: RGBColor = RGBColor(230, 120, 40);
const WIDTH: u32 = 1400;
const LABEL_AREA: u32 = 520;
const LABEL_CHARS: usize = 62;

/// Draws horizontal bars (toolshed, reference) per row into `path`; the axis is logarithmic
/// when the largest time is more than 20 times the smallest.
pub(super) fn bars(path: &Path, title: &str, bars: &[(&Row, f64, f64)]) -> anyhow::Result<()> {
    let n = bars.len();
    let height = 150 + 64 * n as u32;
    let unit = bars.first().map_or("ms", |(r, _, _)| r.unit.as_str());
    let values = bars.iter().flat_map(|(_, t, r)| [*t, *r]);
    let lo = values.clone().fold(f64::INFINITY, f64::min).max(1e-9);
    let hi = values.fold(0.0_f64, f64::max).max(lo);
    let log = hi / lo > 20.0;
    let x = |v: f64| if log { v.log10() } else { v };
    let (x_lo, x_hi) = if log {
        (
            lo.log10().floor(),
            hi.log10().ceil().max(lo.log10().floor() + 1.0),
        )
    } else {
        (0.0, hi * 1.4)
    };
    // Room on the right for the value labels.
    let x_max = if log { x_hi + 1.0 } else { x_hi };

    let mut buffer = vec![0_u8; (WIDTH * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buffer, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let caption = format!(
            "{title}: toolshed vs reference, {unit}, lower is better{}",
            if log { " (log scale)" } else { "" }
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 24))
            .margin(16)
            .margin_top(20)
            .x_label_area_size(36)
            .y_label_area_size(LABEL_AREA)
            .build_cartesian_2d(x_lo..x_max, 0.0..n as f64)
            .map_err(plot_error)?;
        let unit_owned = unit.to_owned();
        let x_labels = if log {
            (x_max - x_lo).ceil() as usize + 1
        } else {
            8
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(x_labels)
            .x_label_formatter(&|v| {
                if log {
                    value_text(10_f64.powf(*v), &unit_owned)
                } else {
                    value_text(*v, &unit_owned)
                }
            })
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(plot_error)?;

        let label_style = TextStyle::from(("sans-serif", 15).into_font())
            .pos(Pos::new(HPos::Right, VPos::Center))
            .color(&BLACK);
        let value_style = TextStyle::from(("sans-serif", 14).into_font())
            .pos(Pos::new(HPos::Left, VPos::Center))
            .color(&BLACK);
        for (i, (row, ours, reference)) in bars.iter().enumerate() {
            // The first row on top.
            let y = (n - 1 - i) as f64;
            let ours_band = (y + 0.52, y + 0.86);
            let ref_band = (y + 0.14, y + 0.48);
            for (value, band, color) in
                [(*ours, ours_band, OURS), (*reference, ref_band, REFERENCE)]
            {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x_lo, band.0), (x(value).max(x_lo), band.1)],
                        color.filled(),
                    )))
                    .map_err(plot_error)?;
            }
            let full = row.reference_name.as_deref().unwrap_or("reference");
            let mut name: String = full.chars().take(26).collect();
            if full.chars().count() > 26 {
                name.push('…');
            }
            for (text, value, band) in [
                (value_text(*ours, unit), *ours, ours_band),
                (
                    format!("{} ({name})", value_text(*reference, unit)),
                    *reference,
                    ref_band,
                ),
            ] {
                let at = chart.backend_coord(&(x(value).max(x_lo), (band.0 + band.1) / 2.0));
                root.draw(&Text::new(text, (at.0 + 6, at.1), &value_style))
                    .map_err(plot_error)?;
            }
            let at = chart.backend_coord(&(x_lo, y + 0.5));
            let mut label: String = row.label.chars().take(LABEL_CHARS).collect();
            if row.label.chars().count() > LABEL_CHARS {
                label.push('…');
            }
            root.draw(&Text::new(label, (at.0 - 10, at.1), &label_style))
                .map_err(plot_error)?;
        }
        // The legend, top right, above the plot.
        let legend_style = TextStyle::from(("sans-serif", 15).into_font())
            .pos(Pos::new(HPos::Left, VPos::Center))
            .color(&BLACK);
        for (i, (name, color)) in [("toolshed", OURS), ("reference", REFERENCE)]
            .into_iter()
            .enumerate()
        {
            let left = WIDTH as i32 - 230 + 110 * i as i32;
            root.draw(&Rectangle::new(
                [(left, 40), (left + 16, 52)],
                color.filled(),
            ))
            .map_err(plot_error)?;
            root.draw(&Text::new(name, (left + 22, 46), &legend_style))
                .map_err(plot_error)?;
        }
        root.present().map_err(plot_error)?;
    }

    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), WIDTH, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().context("PNG header")?;
    writer.write_image_data(&buffer).context("PNG data")?;
    writer.finish().context("PNG end")?;
    Ok(())
}

fn plot_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing failed: {e}")
}
