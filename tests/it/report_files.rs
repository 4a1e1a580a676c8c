//! `planck report` from files: every output written, bad inputs refused with
//! a clear error, the SARIF checked against the 2.1.0 schema's required
//! fields, and the page rendered in headless Chromium (issue 14, section 4).
//! No database: the inputs are the renderers' fixed fixture, written as JSON.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use planck::report;

#[path = "../../src/report/fixture.rs"]
#[allow(dead_code)]
mod fixture;

fn planck(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_planck"))
        .args(args)
        .current_dir(dir)
        .env_remove("DATABASE_URL")
        .env_remove("PLANCK_DATABASE_URL")
        .output()
        .expect("planck runs")
}

fn write_json<T: serde::Serialize>(dir: &Path, name: &str, v: &T) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p
}

/// e.json, r.json and old.json in `dir`.
fn inputs(dir: &Path) {
    write_json(dir, "e.json", &fixture::explain());
    write_json(dir, "r.json", &fixture::replay());
    write_json(dir, "old.json", &fixture::previous());
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn report_writes_every_output_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path());
    let o = planck(
        dir.path(),
        &[
            "report",
            "--explain",
            "e.json",
            "--replay",
            "r.json",
            "--previous",
            "old.json",
            "-o",
            "out/review.html",
            "--markdown",
            "out/review.md",
            "--junit",
            "out/junit.xml",
            "--sarif",
            "out/planck.sarif",
            "--gitlab",
            "out/gl.json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let read = |n: &str| std::fs::read_to_string(dir.path().join("out").join(n)).unwrap();
    let html = read("review.html");
    assert!(html.contains("id=\"chart-throughput\""));
    assert!(html.contains("What changed since old.json"));
    assert!(html.contains("items: Index Scan using items_account_created_idx -&gt; Seq Scan"));
    let md = read("review.md");
    assert!(
        md.starts_with("## planck: fail: 2 new error findings"),
        "{md}"
    );
    assert!(
        md.contains("What changed: 2 plan changes, 1 fixed finding"),
        "{md}"
    );
    assert!(read("junit.xml").contains("<testsuites name=\"planck\""));
    let gl: serde_json::Value = serde_json::from_str(&read("gl.json")).unwrap();
    assert_eq!(gl.as_array().unwrap().len(), 3);
    assert_eq!(
        report::read_explain(&dir.path().join("e.json")).unwrap(),
        fixture::explain()
    );
    let sarif: serde_json::Value = serde_json::from_str(&read("planck.sarif")).unwrap();
    assert_eq!(validate_sarif(&sarif), Vec::<String>::new());
}

#[test]
fn without_a_replay_the_report_says_it_has_none() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path());
    let o = planck(
        dir.path(),
        &["report", "--explain", "e.json", "-o", "review.html"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no --replay given"), "{}", stderr(&o));
    let html = std::fs::read_to_string(dir.path().join("review.html")).unwrap();
    assert!(html.contains("id=\"no-replay\""));
    assert!(!html.contains("id=\"chart-throughput\""));
}

#[test]
fn bad_inputs_and_outputs_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path());
    let mut other = serde_json::to_value(fixture::explain()).unwrap();
    other["format_version"] = 2.into();
    write_json(dir.path(), "v2.json", &other);
    let o = planck(
        dir.path(),
        &["report", "--explain", "v2.json", "-o", "r.html"],
    );
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("v2.json: format_version 2") && e.contains("format_version 1"),
        "{e}"
    );

    let full = std::fs::read_to_string(dir.path().join("e.json")).unwrap();
    std::fs::write(dir.path().join("cut.json"), &full[..full.len() / 3]).unwrap();
    let o = planck(
        dir.path(),
        &["report", "--explain", "cut.json", "-o", "r.html"],
    );
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("cut.json:") && e.contains("EOF while parsing"),
        "{e}"
    );

    // The replay given as --explain is refused by its shape, not its version.
    let o = planck(
        dir.path(),
        &["report", "--explain", "r.json", "-o", "r.html"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not explain's JSON"), "{}", stderr(&o));

    // An output under a regular file cannot be created.
    let o = planck(
        dir.path(),
        &["report", "--explain", "e.json", "-o", "e.json/review.html"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot write e.json/review.html"),
        "{}",
        stderr(&o)
    );

    // A mistyped path makes no folders (it created /nonexistent/dir for a
    // new user); only a missing last folder is made.
    let o = planck(
        dir.path(),
        &["report", "--explain", "e.json", "-o", "nope/deeper/r.html"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot write nope/deeper/r.html"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("nope").exists());
    let o = planck(
        dir.path(),
        &["report", "--explain", "e.json", "-o", "out/r.html"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(dir.path().join("out/r.html").is_file());
    assert!(!dir.path().join("out/r.html.tmp").exists());

    let o = planck(dir.path(), &["report", "--explain", "e.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing to write"), "{}", stderr(&o));
    assert!(!dir.path().join("r.html").exists());
}

/// Violations of the OASIS SARIF 2.1.0 JSON schema (vendored in
/// tests/fixtures/sarif), then the rules the schema cannot state
/// (required properties and enums spelled out, `ruleIndex` pointing at its
/// `ruleId`); one line per violation.
fn validate_sarif(log: &serde_json::Value) -> Vec<String> {
    // The OASIS file's `run.language` pattern ends in an unescaped `]`,
    // which the meta-schema's `regex` format rejects: escaped here only.
    let text = include_str!("../fixtures/sarif/sarif-schema-2.1.0.json");
    let bad = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
    assert!(text.contains(bad), "the schema changed: revisit this");
    let text = text.replace(bad, r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#);
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let mut bad: Vec<String> = validator
        .iter_errors(log)
        .map(|e| format!("schema: {e} at {}", e.instance_path()))
        .collect();
    let mut need = |ok: bool, what: &str| {
        if !ok {
            bad.push(what.to_string());
        }
    };
    need(
        log["version"] == "2.1.0",
        "sarifLog.version must be \"2.1.0\"",
    );
    let runs = log["runs"].as_array();
    need(runs.is_some(), "sarifLog.runs is required");
    for run in runs.into_iter().flatten() {
        let driver = &run["tool"]["driver"];
        need(driver["name"].is_string(), "toolComponent.name is required");
        let rules = driver["rules"].as_array().cloned().unwrap_or_default();
        for r in &rules {
            need(r["id"].is_string(), "reportingDescriptor.id is required");
            need(
                r["help"]["text"].is_string(),
                "multiformatMessageString.text is required",
            );
        }
        for res in run["results"].as_array().into_iter().flatten() {
            need(
                res["message"]["text"].is_string() || res["message"]["id"].is_string(),
                "result.message needs text or id",
            );
            if let Some(l) = res.get("level") {
                need(
                    ["none", "note", "warning", "error"].contains(&l.as_str().unwrap_or("")),
                    "result.level enum",
                );
            }
            if let Some(b) = res.get("baselineState") {
                need(
                    ["new", "unchanged", "updated", "absent"].contains(&b.as_str().unwrap_or("")),
                    "result.baselineState enum",
                );
            }
            if let Some(i) = res["ruleIndex"].as_u64() {
                need(
                    rules.get(i as usize).map(|r| &r["id"]) == Some(&res["ruleId"]),
                    "result.ruleIndex must point at its ruleId",
                );
            }
            for fp in res["partialFingerprints"].as_object().into_iter().flatten() {
                need(fp.1.is_string(), "partialFingerprints values are strings");
            }
            for loc in res["locations"].as_array().into_iter().flatten() {
                let pl = &loc["physicalLocation"];
                need(
                    pl["artifactLocation"].is_object() || pl["address"].is_object(),
                    "physicalLocation needs artifactLocation or address",
                );
                need(
                    pl["artifactLocation"]["uri"].is_string(),
                    "artifactLocation.uri",
                );
                need(
                    pl["region"]["startLine"].as_u64().is_some_and(|l| l >= 1),
                    "region.startLine is an integer >= 1",
                );
            }
        }
    }
    bad
}

#[test]
fn the_sarif_check_catches_a_broken_log() {
    let i = fixture::inputs();
    let mut log: serde_json::Value =
        serde_json::from_str(&fixture::text(report::Output::Sarif, &i)).unwrap();
    assert!(validate_sarif(&log).is_empty());
    let results = &log["runs"][0]["results"];
    assert_eq!(results[0]["ruleId"], "seq-scan");
    assert_eq!(
        results[0]["locations"][0]["physicalLocation"]["region"]["startLine"],
        4
    );
    assert_eq!(
        results[0]["partialFingerprints"]["planck/v1"],
        "seq-scan/a1b2c3d4/admin/items/"
    );
    log["runs"][0]["results"][0]["ruleIndex"] = 3.into();
    log["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        0.into();
    // startLine 0: the schema (minimum 1) and the explicit rule both say so.
    assert_eq!(validate_sarif(&log).len(), 3, "{:?}", validate_sarif(&log));
}

// ---- the browser test (issue 14, section 4) ----

fn browser() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PLANCK_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs headless Chromium on `page` with `extra` flags; its stdout.
fn headless(browser: &Path, page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-dev-shm-usage",
        "--virtual-time-budget=3000",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(extra)
    .arg(format!("file://{}", page.display()));
    let o = cmd.output().expect("chromium starts");
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn dump_dom(browser: &Path, page: &Path) -> String {
    headless(browser, page, &["--dump-dom".to_string()])
}

#[test]
fn the_report_renders_in_headless_chromium_without_console_errors() {
    let Some(chrome) = browser() else {
        crate::skip!(
            Missing,
            "no chromium on PATH (apt-get install -y chromium; .ci/run installs it)"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path());
    let o = planck(
        dir.path(),
        &[
            "report",
            "--explain",
            "e.json",
            "--replay",
            "r.json",
            "--previous",
            "old.json",
            "-o",
            "review.html",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let page = dir.path().join("review.html");
    let dom = dump_dom(&chrome, &page);
    // The scripts ran to their end and parsed every plan's JSON.
    assert!(dom.contains("data-ready=\"1\""), "{dom}");
    assert!(dom.contains("data-plans-parsed=\"3\""), "{dom}");
    assert!(dom.contains("data-console-errors=\"0\""), "{dom}");
    // The chart, the findings and a plan tree with its marked node.
    assert!(
        dom.contains("id=\"chart-throughput\"") && dom.contains("<polyline class=\"usl-curve\"")
    );
    assert!(dom.contains("<circle class=\"step\""));
    assert_eq!(dom.matches("class=\"finding sev-error\"").count(), 2);
    assert!(dom.contains("class=\"plan-tree\""));
    assert!(dom.contains("class=\"plan-node marked\""));

    // The collector does see an error: the same page with a broken script.
    let html = std::fs::read_to_string(&page).unwrap();
    let broken = dir.path().join("broken.html");
    std::fs::write(
        &broken,
        html.replace("</body>", "<script>no_such_function();</script></body>"),
    )
    .unwrap();
    let dom = dump_dom(&chrome, &broken);
    assert!(dom.contains("data-console-errors=\"1\""), "{dom}");
    assert!(dom.contains("no_such_function"), "{dom}");

    // A screenshot that is not blank: many colours, not one background.
    let shot = dir.path().join("shot.png");
    headless(
        &chrome,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,1600".to_string(),
            "--hide-scrollbars".to_string(),
        ],
    );
    let png = std::fs::read(&shot).expect("the screenshot was written");
    let (w, h, pixels) = decode_png(&png);
    assert_eq!((w, h), (1280, 1600));
    let distinct: std::collections::BTreeSet<&[u8]> = pixels.iter().map(|p| p.as_slice()).collect();
    let background = pixels.first().unwrap();
    let other = pixels.iter().filter(|p| *p != background).count();
    assert!(distinct.len() > 20, "{} colours", distinct.len());
    assert!(
        other * 20 > pixels.len(),
        "{other} of {} pixels differ",
        pixels.len()
    );
    // And a blank page fails that check.
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let shot = dir.path().join("blank.png");
    headless(
        &chrome,
        &blank,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=320,240".to_string(),
        ],
    );
    let (_, _, pixels) = decode_png(&std::fs::read(&shot).unwrap());
    let distinct: std::collections::BTreeSet<&[u8]> = pixels.iter().map(|p| p.as_slice()).collect();
    assert!(
        distinct.len() <= 2,
        "{} colours on a blank page",
        distinct.len()
    );
}

/// Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes)
/// into its pixels.
fn decode_png(png: &[u8]) -> (usize, usize, Vec<Vec<u8>>) {
    use std::io::Read;
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let (mut pos, mut idat) = (8, Vec::new());
    let (mut w, mut h, mut channels) = (0, 0, 0);
    while pos + 8 <= png.len() {
        let len = u32::from_be_bytes(png[pos..pos + 4].try_into().unwrap()) as usize;
        let kind = &png[pos + 4..pos + 8];
        let data = &png[pos + 8..pos + 8 + len];
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                h = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "bit depth");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    t => panic!("colour type {t}"),
                };
                assert_eq!(data[12], 0, "interlaced");
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        pos += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .unwrap();
    let stride = w * channels;
    let mut prev = vec![0u8; stride];
    let mut pixels = Vec::with_capacity(w * h);
    for y in 0..h {
        let line = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let (filter, src) = (line[0], &line[1..]);
        let mut cur = vec![0u8; stride];
        for x in 0..stride {
            let a = if x >= channels { cur[x - channels] } else { 0 };
            let b = prev[x];
            let c = if x >= channels { prev[x - channels] } else { 0 };
            let pred = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => panic!("filter {f}"),
            };
            cur[x] = src[x].wrapping_add(pred);
        }
        for px in cur.chunks(channels) {
            pixels.push(px.to_vec());
        }
        prev = cur;
    }
    (w, h, pixels)
}
