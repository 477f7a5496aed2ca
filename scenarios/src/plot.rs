//! `run --plot FILE`: a run's acknowledged writes a second and their p50 and p99 latency
//! over virtual time, as an SVG of two charts sharing the time axis.

use crate::report::Report;
use plotters::prelude::*;
use std::path::Path;

/// Draws `report`'s timeline into an SVG at `path`.
pub fn write_svg(report: &Report, path: &Path) -> Result<(), String> {
    let t = &report.timeline;
    let end_s = t.last().map_or(1, |s| s.at_s + 1).max(report.virtual_s.ceil() as u64);
    let acked_max = t.iter().map(|s| s.acked).max().unwrap_or(0).max(1);
    let latency_max = t.iter().map(|s| s.p99_ms).fold(1.0, f64::max);
    let title = format!("{} seed {}", report.scenario, report.seed);
    let root = SVGBackend::new(path, (1000, 640)).into_drawing_area();
    let fail = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let (upper, lower) = root.split_vertically(320);

    let mut writes = ChartBuilder::on(&upper)
        .caption(format!("{title}: acknowledged writes a second"), ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0u64..end_s, 0u64..acked_max + acked_max / 10 + 1)
        .map_err(|e| fail(&e))?;
    writes.configure_mesh().x_desc("virtual s").y_desc("writes/s").draw().map_err(|e| fail(&e))?;
    writes.draw_series(LineSeries::new(t.iter().map(|s| (s.at_s, s.acked)), &BLUE)).map_err(|e| fail(&e))?;

    let mut latency = ChartBuilder::on(&lower)
        .caption(format!("{title}: write latency"), ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0u64..end_s, 0f64..latency_max * 1.1)
        .map_err(|e| fail(&e))?;
    latency.configure_mesh().x_desc("virtual s").y_desc("ms").draw().map_err(|e| fail(&e))?;
    latency
        .draw_series(LineSeries::new(t.iter().map(|s| (s.at_s, s.p50_ms)), &GREEN))
        .map_err(|e| fail(&e))?
        .label("p50")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], GREEN));
    latency
        .draw_series(LineSeries::new(t.iter().map(|s| (s.at_s, s.p99_ms)), &RED))
        .map_err(|e| fail(&e))?
        .label("p99")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    latency
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}
