//! The HTML flame graph: one self-contained page (its script, style and profile inline; no
//! network access) drawn on a `<canvas>`, with search and the matched share, click to zoom, a
//! reverse (callee-first) view, colours and a legend by frame kind (the SVG's), and every
//! frame's samples and CPU time on hover. [`write_diff`] makes a differential flame graph of
//! two recordings.
//!
//! The profile is embedded as JSON ([`data`]) in a `<script type="application/json">`
//! element that the page parses; names reach the page only through that document and are
//! shown with `textContent` and the canvas, never as markup. A document over
//! [`COMPRESS_ABOVE_BYTES`] is embedded gzip-compressed, in base64, and the page inflates it
//! with the browser's own `DecompressionStream`.

pub mod data;
pub mod tree;

use std::io::{self, Write};

use base64::Engine as _;
use flate2::write::GzEncoder;

use symbolize::report::collapsed::Unit;
use symbolize::report::Aggregate;

use data::Labelled;
use tree::{CallTree, Identity};

const PAGE: &str = include_str!("page.html");
const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Documents larger than this are embedded compressed (gzip's fastest level: 4.3 MB for the
/// 12 MB document of 100,000 frames, against 3.7 MB at its default level in eight times the
/// time).
pub const COMPRESS_ABOVE_BYTES: usize = 1 << 20;

/// The `<script>` element that holds `document`: as it is, or gzip-compressed in base64.
fn data_element(document: &str) -> io::Result<String> {
    if document.len() <= COMPRESS_ABOVE_BYTES {
        return Ok(format!(
            "<script id=\"profile-data\" type=\"application/json\">{document}</script>"
        ));
    }
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(document.as_bytes())?;
    let compressed = gz.finish()?;
    let base64 = base64::engine::general_purpose::STANDARD.encode(compressed);
    Ok(format!(
        "<script id=\"profile-data\" type=\"application/octet-stream\" \
         data-encoding=\"gzip-base64\">{base64}</script>"
    ))
}

/// `text` with the characters that mean something in HTML escaped.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Writes the page: [`PAGE`] with its `{{TITLE}}`, `{{STYLE}}`, `{{SCRIPT}}` and `{{DATA}}`
/// filled in.
fn write_page(title: &str, document: &str, out: &mut dyn Write) -> io::Result<()> {
    let mut rest = PAGE;
    while let Some(at) = rest.find("{{") {
        out.write_all(&rest.as_bytes()[..at])?;
        let Some(len) = rest[at..].find("}}") else {
            break;
        };
        match &rest[at + 2..at + len] {
            "TITLE" => out.write_all(escape_html(title).as_bytes())?,
            "STYLE" => out.write_all(STYLE.as_bytes())?,
            "SCRIPT" => out.write_all(SCRIPT.as_bytes())?,
            "DATA" => out.write_all(data_element(document)?.as_bytes())?,
            other => {
                return Err(io::Error::other(format!(
                    "page template: unknown field {other}"
                )))
            }
        }
        rest = &rest[at + len + 2..];
    }
    out.write_all(rest.as_bytes())
}

/// Writes the HTML flame graph of `agg` (recorded in `name`), widths by `unit` until the
/// reader picks the other.
pub fn write(
    agg: &Aggregate,
    name: &str,
    unit: Unit,
    title: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let tree = CallTree::build(&[agg], Identity::ByKind);
    let profiles = [Labelled {
        name: name.to_string(),
        aggregate: agg,
    }];
    write_page(title, &data::document(&tree, &profiles, unit, title), out)
}

/// Writes the differential flame graph of `new` against `base`: NEW's stacks, each frame
/// coloured by how its share of its recording's total changed (red: grew, blue: shrank);
/// frames only in BASE are found by search and drawn with the BASE shape. A Java method's
/// frames are one function whatever their tier ([`Identity::JavaTiersMerged`]).
pub fn write_diff(
    base: (&Aggregate, &str),
    new: (&Aggregate, &str),
    unit: Unit,
    title: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let tree = CallTree::build(&[new.0, base.0], Identity::JavaTiersMerged);
    let profiles = [
        Labelled {
            name: new.1.to_string(),
            aggregate: new.0,
        },
        Labelled {
            name: base.1.to_string(),
            aggregate: base.0,
        },
    ];
    write_page(title, &data::document(&tree, &profiles, unit, title), out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_is_escaped_and_every_field_filled() {
        let agg = Aggregate::default();
        let mut page = Vec::new();
        write(&agg, "a.jfr", Unit::CpuNanos, "<b>&\"'", &mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("<title>&lt;b&gt;&amp;&quot;&#39;</title>"));
        assert!(!page.contains("{{"), "a field left unfilled");
        assert!(page.contains("\"title\":\"\\u003cb>&\\\"'\""));
    }
}
