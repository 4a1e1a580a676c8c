//! Collects the plan checks' declarations into the `CheckId` enum.
//!
//! A plan check is one file of `src/explain/rules/` and one line in the
//! `checks!` list of `src/explain/rules/mod.rs` (issue 34). The file
//! declares its id and help with `declare_check!`:
//!
//! ```text
//! declare_check! {
//!     /// What to do about a finding (the help every renderer shows).
//!     pub struct SeqScan => "seq-scan";
//! }
//! ```
//!
//! (`also Name => "id";` declares a second id the check emits.) The id has
//! to be known below `explain` too: `findings` parses `disable = [...]`,
//! baselines and ignore rules, and `report` lists every check's help in
//! SARIF, and neither may import a domain. So this script reads the list
//! and the declarations and writes the enum, its strings and its help into
//! `$OUT_DIR/check_ids.rs`, which `src/findings/mod.rs` includes: `findings`
//! gets the data without depending on `explain`'s code. The order of the
//! list is the report order.

use std::fmt::Write as _;
use std::path::Path;

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, Ident, Item, Lit, LitStr, Meta, Token};

const RULES: &str = "src/explain/rules";

fn main() {
    println!("cargo::rerun-if-changed={RULES}");
    let rules = Path::new(RULES);
    let mut ids: Vec<Declared> = Vec::new();
    for module in listed_modules(&rules.join("mod.rs")) {
        // A check is a file, or a folder (its measurement beside it).
        let mut file = rules.join(format!("{module}.rs"));
        if !file.is_file() {
            file = rules.join(&module).join("mod.rs");
        }
        let found = declarations(&file);
        if !found.iter().any(|d| !d.also) {
            fail(
                &file,
                "declares no check: add a `declare_check! { ... }` with its id and help",
            );
        }
        ids.extend(found);
    }
    for (i, d) in ids.iter().enumerate() {
        if let Some(other) = ids[..i].iter().find(|o| o.id == d.id || o.name == d.name) {
            panic!(
                "check `{}` ({}) is declared twice (also as `{}`, {})",
                d.id, d.name, other.id, other.name
            );
        }
    }
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join("check_ids.rs"), render(&ids))
        .expect("writing check_ids.rs");
}

/// One id a check file declares.
struct Declared {
    name: Ident,
    id: String,
    help: String,
    /// A second id of a check declared in the same file (`also`).
    also: bool,
}

impl Parse for Declared {
    fn parse(input: ParseStream) -> syn::Result<Declared> {
        let attrs = input.call(Attribute::parse_outer)?;
        let also = if input.peek(Token![pub]) {
            input.parse::<Token![pub]>()?;
            input.parse::<Token![struct]>()?;
            false
        } else {
            let word: Ident = input.parse()?;
            if word != "also" {
                return Err(syn::Error::new(
                    word.span(),
                    "expected `pub struct` or `also`",
                ));
            }
            true
        };
        let name: Ident = input.parse()?;
        input.parse::<Token![=>]>()?;
        let id: LitStr = input.parse()?;
        input.parse::<Token![;]>()?;
        let help = help_of(&attrs);
        if help.is_empty() {
            return Err(syn::Error::new(
                name.span(),
                "a check's help is its doc comment, and it has none",
            ));
        }
        let id = id.value();
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(syn::Error::new(
                name.span(),
                format!("check id {id:?} is not kebab-case"),
            ));
        }
        Ok(Declared {
            name,
            id,
            help,
            also,
        })
    }
}

/// The doc comment's lines joined with single spaces: one paragraph.
fn help_of(attrs: &[Attribute]) -> String {
    let mut words: Vec<String> = Vec::new();
    for a in attrs {
        if let Meta::NameValue(nv) = &a.meta
            && nv.path.is_ident("doc")
            && let Expr::Lit(e) = &nv.value
            && let Lit::Str(s) = &e.lit
        {
            let line = s.value();
            let line = line.trim();
            if !line.is_empty() {
                words.push(line.to_string());
            }
        }
    }
    words.join(" ")
}

/// The modules named in `checks! { module::Type, ... }`, in order.
fn listed_modules(mod_rs: &Path) -> Vec<String> {
    let file = parse_file(mod_rs);
    let list = file.items.iter().find_map(|item| match item {
        Item::Macro(m) if m.mac.path.is_ident("checks") => Some(&m.mac),
        _ => None,
    });
    let Some(list) = list else {
        fail(mod_rs, "has no `checks! { ... }` list");
    };
    let paths = list
        .parse_body_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
        .unwrap_or_else(|e| fail(mod_rs, &format!("its `checks!` list: {e}")));
    paths
        .iter()
        .map(|p| match p.segments.first() {
            Some(m) if p.segments.len() == 2 => m.ident.to_string(),
            _ => fail(mod_rs, "each entry of `checks!` is `module::Check`"),
        })
        .collect()
}

/// Every `declare_check!` at the top of a check's file, in order.
fn declarations(file: &Path) -> Vec<Declared> {
    parse_file(file)
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Macro(m) if m.mac.path.is_ident("declare_check") => Some(&m.mac),
            _ => None,
        })
        .flat_map(|mac| {
            mac.parse_body_with(|input: ParseStream| {
                let mut all = Vec::new();
                while !input.is_empty() {
                    all.push(input.parse::<Declared>()?);
                }
                Ok(all)
            })
            .unwrap_or_else(|e| fail(file, &format!("its `declare_check!`: {e}")))
        })
        .collect()
}

fn parse_file(path: &Path) -> syn::File {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(path, &e.to_string()));
    syn::parse_file(&text).unwrap_or_else(|e| fail(path, &e.to_string()))
}

fn fail(path: &Path, what: &str) -> ! {
    panic!("{}: {what}", path.display())
}

/// The enum and its tables, as Rust source.
fn render(ids: &[Declared]) -> String {
    let mut s = String::new();
    s.push_str(
        "/// Every id a check can emit, kebab-case on the wire, in report order.\n\
         /// Written by build.rs from each check's `declare_check!` in\n\
         /// `src/explain/rules/` (the order of `checks!` in its `mod.rs`).\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash,\n\
         \x20        serde::Serialize, serde::Deserialize, clap::ValueEnum)]\n\
         pub enum CheckId {\n",
    );
    for d in ids {
        let _ = writeln!(
            s,
            "    #[serde(rename = {id:?})]\n    #[value(name = {id:?})]\n    {name},",
            id = d.id,
            name = d.name
        );
    }
    s.push_str("}\n\nimpl CheckId {\n");
    let _ = writeln!(s, "    pub const ALL: [CheckId; {}] = [", ids.len());
    for d in ids {
        let _ = writeln!(s, "        CheckId::{},", d.name);
    }
    s.push_str("    ];\n\n    pub fn as_str(self) -> &'static str {\n        match self {\n");
    for d in ids {
        let _ = writeln!(s, "            CheckId::{} => {:?},", d.name, d.id);
    }
    s.push_str(
        "        }\n    }\n\n    \
         /// What to do about a finding of this check: the doc comment of its\n    \
         /// `declare_check!`, so a renderer can list every check's help (SARIF's\n    \
         /// rule table) without running any check.\n    \
         pub fn help(self) -> &'static str {\n        match self {\n",
    );
    for d in ids {
        let _ = writeln!(s, "            CheckId::{} => {:?},", d.name, d.help);
    }
    s.push_str("        }\n    }\n}\n");
    s
}
