//! `plot-bench`: a benchmark's JSON rows as an SVG of horizontal bars, one chart a value
//! column, so `just bench` leaves a picture next to each JSON file it writes.

use plotters::prelude::*;
use serde_json::Value;
use std::path::Path;

/// Why a bench file could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotBenchError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path} is not a JSON list of objects: {reason}")]
    Shape { path: String, reason: String },
    #[error("row {row} of {path} has no number at {column:?}")]
    NotANumber { path: String, row: usize, column: String },
    #[error("cannot draw {path}: {reason}")]
    Draw { path: String, reason: String },
}

/// One bar: its label and its value in each column drawn.
struct Bar {
    label: String,
    values: Vec<f64>,
}

/// Reads the rows at `input` (a JSON list of objects), labels each by `label_columns`
/// joined with spaces, and draws one chart of bars for each of `value_columns` into an
/// SVG at `output`.
pub fn write_svg(
    input: &Path,
    label_columns: &[String],
    value_columns: &[String],
    output: &Path,
) -> Result<usize, PlotBenchError> {
    let path = input.display().to_string();
    let text = std::fs::read_to_string(input)
        .map_err(|source| PlotBenchError::Read { path: path.clone(), source })?;
    let bars = bars(&text, label_columns, value_columns).map_err(|e| match e {
        RowsError::Shape(reason) => PlotBenchError::Shape { path: path.clone(), reason },
        RowsError::NotANumber { row, column } => {
            PlotBenchError::NotANumber { path: path.clone(), row, column }
        }
    })?;
    draw(
        &bars,
        value_columns,
        &input.file_stem().map_or(path.clone(), |s| s.to_string_lossy().into()),
        output,
    )
    .map_err(|reason| PlotBenchError::Draw { path: output.display().to_string(), reason })?;
    Ok(bars.len())
}

#[derive(Debug, PartialEq)]
enum RowsError {
    Shape(String),
    NotANumber { row: usize, column: String },
}

fn bars(text: &str, label_columns: &[String], value_columns: &[String]) -> Result<Vec<Bar>, RowsError> {
    let rows: Value = serde_json::from_str(text).map_err(|e| RowsError::Shape(e.to_string()))?;
    let rows = rows.as_array().ok_or_else(|| RowsError::Shape("not a list".into()))?;
    if rows.is_empty() {
        return Err(RowsError::Shape("no rows".into()));
    }
    rows.iter()
        .enumerate()
        .map(|(row, r)| {
            let r = r.as_object().ok_or_else(|| RowsError::Shape(format!("row {row} is not an object")))?;
            let label = label_columns
                .iter()
                .filter_map(|c| r.get(c))
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(" ");
            let values = value_columns
                .iter()
                .map(|c| {
                    r.get(c).and_then(Value::as_f64).ok_or(RowsError::NotANumber { row, column: c.clone() })
                })
                .collect::<Result<_, _>>()?;
            Ok(Bar { label, values })
        })
        .collect()
}

fn draw(bars: &[Bar], value_columns: &[String], title: &str, output: &Path) -> Result<(), String> {
    let row_px = 22u32;
    let chart_px = 60 + row_px * bars.len() as u32;
    let root = SVGBackend::new(output, (1000, chart_px * value_columns.len() as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let label_px = bars.iter().map(|b| b.label.len() as u32 * 7 + 10).max().unwrap_or(60).min(420);
    for (i, (area, column)) in
        root.split_evenly((value_columns.len(), 1)).iter().zip(value_columns).enumerate()
    {
        let max = bars.iter().map(|b| b.values[i]).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{title}: {column}"), ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(24)
            .y_label_area_size(label_px)
            .build_cartesian_2d(0.0..max * 1.1, (0..bars.len()).into_segmented())
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(bars.len())
            .y_label_formatter(&|y| match y {
                SegmentValue::CenterOf(j) => bars.get(*j).map_or(String::new(), |b| b.label.clone()),
                _ => String::new(),
            })
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(bars.iter().enumerate().map(|(j, b)| {
                let (top, bottom) = (SegmentValue::Exact(j), SegmentValue::Exact(j + 1));
                let mut bar = Rectangle::new([(0.0, top), (b.values[i], bottom)], BLUE.mix(0.6).filled());
                bar.set_margin(3, 3, 0, 0);
                bar
            }))
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn rows_are_labelled_by_their_columns_and_valued_by_theirs() {
        let text = r#"[{"system":"slotlog","writers":64,"writes_per_s":700.5},
                       {"system":"slatedb","writers":256,"writes_per_s":5700}]"#;
        let bars = bars(text, &cols(&["system", "writers"]), &cols(&["writes_per_s"])).unwrap();
        let seen: Vec<_> = bars.iter().map(|b| (b.label.as_str(), b.values[0])).collect();
        assert_eq!(seen, [("slotlog 64", 700.5), ("slatedb 256", 5700.0)]);
    }

    #[test]
    fn a_missing_or_non_numeric_value_names_its_row_and_column() {
        let text = r#"[{"a":"x","v":1},{"a":"y","v":"fast"}]"#;
        assert_eq!(
            bars(text, &cols(&["a"]), &cols(&["v"])).err(),
            Some(RowsError::NotANumber { row: 1, column: "v".into() })
        );
        assert!(matches!(bars("{}", &cols(&["a"]), &cols(&["v"])), Err(RowsError::Shape(_))));
        assert!(matches!(bars("[]", &cols(&["a"]), &cols(&["v"])), Err(RowsError::Shape(_))));
    }

    #[test]
    fn a_chart_is_written_as_svg() {
        let dir = tempfile::tempdir().unwrap();
        let (input, output) = (dir.path().join("b.json"), dir.path().join("b.svg"));
        std::fs::write(&input, r#"[{"c":"one","v":1,"w":3},{"c":"two","v":2,"w":1}]"#).unwrap();
        assert_eq!(write_svg(&input, &cols(&["c"]), &cols(&["v", "w"]), &output).unwrap(), 2);
        let svg = std::fs::read_to_string(&output).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("one") && svg.contains("b: w"), "{svg}");
    }
}
