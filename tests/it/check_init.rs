//! `planck init`: writes planck.toml with every key and its default, which
//! planck's own config reader accepts; refuses to overwrite without --force.

use crate::common;

use common::{assert_exit, planck_cmd, stderr};

#[test]
fn init_writes_a_file_planck_reads_and_refuses_to_overwrite_it() {
    let dir = common::project_dir();
    let out = planck_cmd(dir.path()).arg("init").output().unwrap();
    assert_exit(&out, 0);
    let path = dir.path().join("planck.toml");
    let c = planck::config::load(&path).unwrap();
    assert_eq!(c.check.fail_on, Some(vec!["errors".to_string()]));
    assert_eq!(c.explain.min_rows, Some(10_000));
    let written = std::fs::read_to_string(&path).unwrap();
    // Each check's own knobs, listed from the checks with their defaults.
    assert!(
        written.contains("[explain.checks.rls-policy]\n# A tenant plan this many times")
            && written.contains("\ncost_ratio = 10.0\n"),
        "{written}"
    );

    std::fs::write(&path, "# mine\n").unwrap();
    let out = planck_cmd(dir.path()).arg("init").output().unwrap();
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n");

    let out = planck_cmd(dir.path())
        .args(["init", "--force"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    // Commands read it: check prints no "no planck.toml" line with one present.
    let out = planck_cmd(dir.path())
        .args(["check", "--base", "main"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(!stderr(&out).contains("no planck.toml"), "{}", stderr(&out));
}
