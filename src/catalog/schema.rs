//! What the database says about its tables: the facts `planck seed` plans from.
//!
//! One pass over `pg_catalog` collects, for every ordinary or partitioned
//! table outside the system schemas, its columns (type, domain, enum labels,
//! array element, NOT NULL, default, identity, generated), its primary key,
//! unique constraints and unique indexes (composite and partial), foreign keys
//! (composite and self-referencing), CHECK constraints (as text, parsed by
//! `seed::check_expr`) and, for a range- or list-partitioned table, the
//! bounds of its partitions. Nothing here decides anything; see `seed::planner`.

use std::collections::HashMap;

use tokio_postgres::{Client, GenericClient};

use crate::error::{Error, Result};

/// planck's own bookkeeping tables, never seeded.
pub const OWN_TABLES: &[&str] = &[PLANCK_MIGRATIONS, "planck_seed_saved"];

/// The tables where migration tools record what they applied (sqlx, Rails
/// and golang-migrate, Django, Flyway, Knex, Prisma, Alembic, goose,
/// node-pg-migrate, Diesel, Sequelize, Entity Framework), matched on the bare
/// name in any schema. `record` drops the statements that touch them
/// (`stats::noise`); `seed` never touches them, whatever the flags, since
/// random rows there make the next migration run replay (or skip) everything
/// (but for [`TOOL_METADATA_TABLES`], which it fills as ordinary tables).
pub const MIGRATION_TABLES: &[&str] = &[
    "_sqlx_migrations",
    "schema_migrations",
    "ar_internal_metadata",
    "django_migrations",
    "flyway_schema_history",
    "knex_migrations",
    "knex_migrations_lock",
    "_prisma_migrations",
    "alembic_version",
    "goose_db_version",
    "pgmigrations",
    "__diesel_schema_migrations",
    "SequelizeMeta",
    "__EFMigrationsHistory",
    "databasechangelog",
    "databasechangeloglock",
    "doctrine_migration_versions",
    "kysely_migration",
    "kysely_migration_lock",
    "__drizzle_migrations",
];

/// Key-value tables of [`MIGRATION_TABLES`] that record no migration: the
/// tool writes a few keys of its own there and reads only those (Rails'
/// `ar_internal_metadata`: `environment`, which guards the destructive
/// tasks, and `schema_sha1`; `rails db:schema:load` writes them, loading
/// `structure.sql` with psql does not). Rows under other keys change
/// nothing for the tool, so `seed` treats these as ordinary tables: rows
/// already there are kept whole (reference data), an empty one gets a few
/// rows (a configuration table, see `seed::sizing_roles`) whose generated
/// keys (words and a `-<row>` suffix) are never the tool's. `record` and
/// `explain` still take them for bookkeeping.
pub const TOOL_METADATA_TABLES: &[&str] = &["ar_internal_metadata"];

/// Whether a table (its bare name) is one of [`TOOL_METADATA_TABLES`].
pub fn is_tool_metadata(name: &str) -> bool {
    TOOL_METADATA_TABLES.contains(&name)
}

/// Where planck's own `migrate` records what it applied.
pub const PLANCK_MIGRATIONS: &str = "planck_migrations";

/// Whether a table (its bare name) is a migration tool's bookkeeping,
/// planck's own included: never seeded.
pub fn is_migration_bookkeeping(name: &str) -> bool {
    name == PLANCK_MIGRATIONS || MIGRATION_TABLES.contains(&name)
}

#[derive(Debug, Clone, PartialEq)]
pub enum TypeKind {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric,
    Text,
    Bytea,
    Uuid,
    Date,
    Timestamp,
    Timestamptz,
    Time,
    Interval,
    Json,
    Jsonb,
    Inet,
    TsVector,
    Enum(Vec<String>),
    /// Element kind and the element type's oid (binary arrays carry it).
    Array(Box<TypeKind>, u32),
    Unsupported(String),
    Money,
    /// A range over the subtype's kind (int4range, tstzrange, a user's range type).
    Range(Box<TypeKind>),
    /// A multirange (PostgreSQL 14+) of ranges over the subtype's kind.
    MultiRange(Box<TypeKind>),
    Point,
    Cidr,
    MacAddr,
    MacAddr8,
    TimeTz,
    /// `bit(n)` (exact length) or `varbit(n)` (at most n bits; None: unbounded).
    Bit {
        len: Option<usize>,
        varying: bool,
    },
    Xml,
    TsQuery,
    /// The one-byte `"char"` type.
    Char,
    /// The `hstore` extension's key/value type.
    Hstore,
    /// The `ltree` extension's label path type.
    Ltree,
    /// A composite type: each attribute's type oid (binary records carry it),
    /// typmod (varchar(n), numeric(p, s) as `pg_attribute` holds it) and kind.
    Composite(Vec<(u32, i32, TypeKind)>),
    /// The geometric types other than point.
    Box,
    Lseg,
    Line,
    Circle,
    Path,
    Polygon,
    PgLsn,
}

impl TypeKind {
    pub fn is_int(&self) -> bool {
        matches!(self, TypeKind::Int2 | TypeKind::Int4 | TypeKind::Int8)
    }

    pub fn is_text(&self) -> bool {
        matches!(self, TypeKind::Text)
    }

    pub fn is_time(&self) -> bool {
        matches!(
            self,
            TypeKind::Timestamp | TypeKind::Timestamptz | TypeKind::Date
        )
    }

    /// Largest value of an integer kind.
    pub fn int_max(&self) -> i64 {
        match self {
            TypeKind::Int2 => i64::from(i16::MAX),
            TypeKind::Int4 => i64::from(i32::MAX),
            _ => i64::MAX,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Column {
    pub attnum: i16,
    pub name: String,
    /// As `format_type` prints it, for messages.
    pub type_name: String,
    pub kind: TypeKind,
    pub not_null: bool,
    pub default: Option<String>,
    pub identity: bool,
    pub generated: bool,
    /// Maximum length in characters (varchar(n), char(n)).
    pub max_len: Option<usize>,
    /// Precision and scale of numeric(p, s).
    pub numeric: Option<(u32, u32)>,
    /// CHECK constraints of the column's domain(s), `VALUE` standing for the column.
    pub domain_checks: Vec<String>,
    /// The sequence feeding the column (identity or `nextval` default).
    pub sequence: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Unique {
    pub name: String,
    /// Column indices (into `Table::columns`).
    pub cols: Vec<usize>,
    pub primary: bool,
    /// A partial index's way out: columns its predicate requires NULL
    /// (`WHERE deleted_at IS NULL`), so a row holding a value in one of
    /// them is not in the index and may repeat the key.
    pub escape: Vec<usize>,
    /// An expression index's expressions, as `pg_get_indexdef` prints
    /// them (`lower(handle)`, `(data ->> 'key'::text)`); `cols` holds the
    /// columns they read.
    pub exprs: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct ForeignKey {
    pub name: String,
    pub cols: Vec<usize>,
    /// Index of the referenced table in `Schema::tables` (None: not seedable, e.g. a system table).
    pub parent: Option<usize>,
    pub parent_name: String,
    /// Column indices in the parent.
    pub parent_cols: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct CheckConstraint {
    pub name: String,
    pub def: String,
    pub cols: Vec<usize>,
}

/// Bounds of the partitions of a table partitioned on one column.
#[derive(Debug, Clone)]
pub enum PartitionBounds {
    /// `[from, to)` per partition, as the text the server printed (None: MINVALUE/MAXVALUE).
    Range(Vec<(Option<String>, Option<String>)>),
    List(Vec<String>),
    /// Hash partitions or a default partition: any value fits.
    Any,
}

#[derive(Debug, Clone)]
pub struct Partitioning {
    pub col: usize,
    pub bounds: PartitionBounds,
    /// `r`ange, `l`ist or `h`ash.
    pub strategy: char,
    /// The table has no partition yet: no row can go in (see
    /// `seed::partitions`, which creates them).
    pub empty: bool,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub oid: u32,
    pub schema: String,
    pub name: String,
    pub partitioned: bool,
    pub columns: Vec<Column>,
    pub uniques: Vec<Unique>,
    pub fks: Vec<ForeignKey>,
    pub checks: Vec<CheckConstraint>,
    pub partitioning: Option<Partitioning>,
    /// Whether the table held rows when the catalog was read (`EXISTS`, so
    /// cheap on any size; rows of its partitions count, those of
    /// old-style inheritance children do not).
    pub has_rows: bool,
    /// A migration tool's bookkeeping table ([`is_migration_bookkeeping`],
    /// [`TOOL_METADATA_TABLES`] aside): never seeded.
    pub migration_bookkeeping: bool,
    /// Partitions that are partitioned in turn (at any depth): each one's
    /// key (a column of this table) and its own partitions' bounds.
    pub sub_partitions: Vec<Partitioning>,
    /// EXCLUDE constraints.
    pub exclusions: Vec<Exclusion>,
}

/// An EXCLUDE constraint: its elements (a column, or None for an
/// expression) with their operators, in order.
#[derive(Debug, Clone)]
pub struct Exclusion {
    pub name: String,
    pub def: String,
    /// The index access method (`gist`, `btree`, ...).
    pub method: String,
    pub elems: Vec<(Option<usize>, String)>,
}

impl Table {
    /// The name users write: bare in `public`, else `schema.name`.
    pub fn display(&self) -> String {
        if self.schema == "public" {
            self.name.clone()
        } else {
            format!("{}.{}", self.schema, self.name)
        }
    }

    /// The quoted, schema-qualified name for SQL.
    pub fn qualified(&self) -> String {
        format!(
            "{}.{}",
            crate::db::quote_ident(&self.schema),
            crate::db::quote_ident(&self.name)
        )
    }

    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Schema {
    pub tables: Vec<Table>,
}

impl Schema {
    pub fn find(&self, name: &str) -> Option<usize> {
        let (schema, bare) = match name.split_once('.') {
            Some((s, n)) => (s, n),
            None => ("public", name),
        };
        self.tables
            .iter()
            .position(|t| t.schema == schema && t.name == bare)
    }
}

struct TypeRow {
    name: String,
    typtype: i8,
    basetype: u32,
    elem: u32,
    category: i8,
    typmod: i32,
    notnull: bool,
}

fn dberr(what: &str) -> impl FnOnce(tokio_postgres::Error) -> Error + '_ {
    move |e| Error::db(format!("reading the catalog ({what})"), e)
}

/// Reads the catalog. Foreign keys an interrupted run left saved (and which
/// could not be restored yet) are put back as NOT VALID inside a transaction
/// that is rolled back, so the plan sees the schema as the user wrote it.
pub async fn load(client: &mut Client, pending_fks: &[(String, String, String)]) -> Result<Schema> {
    let tx = client
        .transaction()
        .await
        .map_err(|e| Error::db("reading the catalog", e))?;
    for (table, name, def) in pending_fks {
        let def = def.trim_end().trim_end_matches("NOT VALID").trim_end();
        tx.batch_execute(&format!(
            "ALTER TABLE {table} ADD CONSTRAINT {} {def} NOT VALID",
            crate::db::quote_ident(name)
        ))
        .await
        .map_err(|e| Error::db(format!("re-reading saved foreign key {name}"), e))?;
    }
    let cat = load_in(&tx).await;
    tx.rollback()
        .await
        .map_err(|e| Error::db("reading the catalog", e))?;
    cat
}
/// What the phases after [`read_tables`] share.
struct Reading {
    tables: Vec<Table>,
    /// Table oid -> index in `tables`.
    by_oid: HashMap<u32, usize>,
    oids: Vec<u32>,
}

/// The types a catalog's columns reach, through domains and arrays.
#[derive(Default)]
struct Types {
    rows: HashMap<u32, TypeRow>,
    domain_checks: HashMap<u32, Vec<String>>,
    enums: HashMap<u32, Vec<String>>,
    /// Range type -> its subtype; multirange -> its range type (see [`read_type_parts`]).
    range_sub: HashMap<u32, u32>,
    /// Composite type -> its attributes' type oids and typmods, in order.
    attrs: HashMap<u32, Vec<(u32, i32)>>,
}

/// One pass over the catalog, in phases: the tables, their columns (and the
/// types those reach), constraints, foreign keys declared on partitions,
/// unique indexes that back no constraint, partition bounds, and the keys
/// declared on a partition only ([`read_leaf_keys`]).
async fn load_in(client: &impl GenericClient) -> Result<Schema> {
    let tables = read_tables(client).await?;
    let by_oid = tables.iter().enumerate().map(|(i, t)| (t.oid, i)).collect();
    let oids = tables.iter().map(|t| t.oid).collect();
    let mut r = Reading {
        tables,
        by_oid,
        oids,
    };
    read_columns(client, &mut r).await?;
    read_constraints(client, &mut r).await?;
    read_partition_fks(client, &mut r).await?;
    read_unique_indexes(client, &mut r).await?;
    read_partitions(client, &mut r).await?;
    read_sub_partitions(client, &mut r).await?;
    read_exclusions(client, &mut r).await?;
    read_leaf_keys(client, &mut r).await?;
    Ok(Schema { tables: r.tables })
}

/// Ordinary and partitioned tables outside the system schemas and
/// extensions, planck's own bookkeeping left out.
async fn read_tables(client: &impl GenericClient) -> Result<Vec<Table>> {
    let rows = client
        .query(
            "SELECT c.oid, n.nspname, c.relname, c.relkind = 'p'
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
                AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'planck')
                AND n.nspname NOT LIKE 'pg\\_%'
                AND NOT EXISTS (SELECT 1 FROM pg_depend d
                                 WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                                   AND d.deptype = 'e')
              ORDER BY n.nspname, c.relname",
            &[],
        )
        .await
        .map_err(dberr("tables"))?;
    let mut tables: Vec<Table> = Vec::new();
    for r in rows {
        let name: String = r.get(2);
        let schema: String = r.get(1);
        if schema == "public" && OWN_TABLES.contains(&name.as_str()) {
            continue;
        }
        tables.push(Table {
            oid: r.get(0),
            schema,
            name,
            partitioned: r.get(3),
            columns: Vec::new(),
            uniques: Vec::new(),
            fks: Vec::new(),
            checks: Vec::new(),
            partitioning: None,
            has_rows: false,
            migration_bookkeeping: false,
            sub_partitions: Vec::new(),
            exclusions: Vec::new(),
        });
    }
    for t in &mut tables {
        t.migration_bookkeeping = is_migration_bookkeeping(&t.name) && !is_tool_metadata(&t.name);
        // ONLY: an old-style inheritance parent is not full because its
        // children are (they are tables of their own here).
        // A table the role may not read counts as empty (it cannot be
        // seeded either: the plan or the load says so). Asked apart: the
        // server checks privileges on every table a query names.
        let readable: bool = client
            .query_one("SELECT has_table_privilege($1::oid, 'SELECT')", &[&t.oid])
            .await
            .map_err(dberr("privileges"))?
            .get(0);
        if !readable {
            continue;
        }
        let only = if t.partitioned { "" } else { "ONLY " };
        t.has_rows = client
            .query_one(
                &format!("SELECT EXISTS (SELECT 1 FROM {only}{})", t.qualified()),
                &[],
            )
            .await
            .map_err(dberr("whether tables hold rows"))?
            .get(0);
    }
    Ok(tables)
}

/// Every column of every table, its type resolved through domains.
async fn read_columns(client: &impl GenericClient, r: &mut Reading) -> Result<()> {
    let Reading {
        tables,
        by_oid,
        oids,
    } = r;
    let (by_oid, oids) = (&*by_oid, &*oids);
    let cols = client
        .query(
            "SELECT a.attrelid, a.attnum, a.attname, a.atttypid, a.atttypmod, a.attnotnull,
                    pg_get_expr(d.adbin, d.adrelid), a.attidentity <> '', a.attgenerated <> '',
                    format_type(a.atttypid, a.atttypmod),
                    pg_get_serial_sequence(quote_ident(n.nspname) || '.' || quote_ident(c.relname), a.attname)
               FROM pg_attribute a
               JOIN pg_class c ON c.oid = a.attrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
               LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
              WHERE a.attrelid = ANY($1) AND a.attnum > 0 AND NOT a.attisdropped
              ORDER BY a.attrelid, a.attnum",
            &[&oids],
        )
        .await
        .map_err(dberr("columns"))?;
    let mut types = read_types(client, cols.iter().map(|r| r.get::<_, u32>(3)).collect()).await?;
    read_type_parts(client, &mut types).await?;
    let all_types = &types;
    let Types {
        rows: types,
        domain_checks,
        ..
    } = &types;
    for r in &cols {
        let Some(&ti) = by_oid.get(&r.get::<_, u32>(0)) else {
            continue;
        };
        let mut typid: u32 = r.get(3);
        let mut typmod: i32 = r.get(4);
        let mut checks = Vec::new();
        let mut not_null: bool = r.get(5);
        // Resolve domains down to their base type.
        let mut guard = 0;
        while let Some(t) = types.get(&typid) {
            if t.typtype != b'd' as i8 || guard > 16 {
                break;
            }
            not_null |= t.notnull;
            checks.extend(domain_checks.get(&typid).cloned().unwrap_or_default());
            if typmod < 0 {
                typmod = t.typmod;
            }
            typid = t.basetype;
            guard += 1;
        }
        let kind = kind_of(typid, typmod, all_types);
        let default: Option<String> = r.get(6);
        let serial: Option<String> = r.get(10);
        let sequence = serial.or_else(|| default.as_deref().and_then(nextval_sequence));
        let (max_len, numeric) = match (&kind, types.get(&typid).map(|t| t.name.as_str())) {
            (TypeKind::Text, Some("varchar" | "bpchar")) if typmod >= 4 => {
                (Some((typmod - 4) as usize), None)
            }
            (TypeKind::Numeric, _) if typmod >= 4 => {
                let m = typmod - 4;
                (
                    None,
                    Some((((m >> 16) & 0xffff) as u32, (m & 0xffff) as u32)),
                )
            }
            _ => (None, None),
        };
        tables[ti].columns.push(Column {
            attnum: r.get(1),
            name: r.get(2),
            type_name: r.get(9),
            kind,
            not_null,
            default,
            identity: r.get(7),
            generated: r.get(8),
            max_len,
            numeric,
            domain_checks: checks,
            sequence,
        });
    }

    Ok(())
}

/// Every type reachable from `pending` through domains and arrays, with the
/// domains' CHECK constraints and the enums' labels.
async fn read_types(client: &impl GenericClient, mut pending: Vec<u32>) -> Result<Types> {
    let mut types: HashMap<u32, TypeRow> = HashMap::new();
    let mut domain_checks: HashMap<u32, Vec<String>> = HashMap::new();
    let mut enums: HashMap<u32, Vec<String>> = HashMap::new();
    while !pending.is_empty() {
        pending.sort_unstable();
        pending.dedup();
        pending.retain(|o| !types.contains_key(o));
        if pending.is_empty() {
            break;
        }
        let trs = client
            .query(
                "SELECT oid, typname, typtype::\"char\", typbasetype, typelem, typcategory::\"char\", typtypmod, typnotnull
                   FROM pg_type WHERE oid = ANY($1)",
                &[&pending],
            )
            .await
            .map_err(dberr("types"))?;
        let mut next = Vec::new();
        for t in trs {
            let row = TypeRow {
                name: t.get(1),
                typtype: t.get(2),
                basetype: t.get(3),
                elem: t.get(4),
                category: t.get(5),
                typmod: t.get(6),
                notnull: t.get(7),
            };
            if row.basetype != 0 {
                next.push(row.basetype);
            }
            if row.elem != 0 && row.category == b'A' as i8 {
                next.push(row.elem);
            }
            types.insert(t.get(0), row);
        }
        pending = next;
    }
    let type_oids: Vec<u32> = types.keys().copied().collect();
    for r in client
        .query(
            "SELECT contypid, pg_get_constraintdef(oid) FROM pg_constraint
              WHERE contypid = ANY($1) AND contype = 'c' ORDER BY conname",
            &[&type_oids],
        )
        .await
        .map_err(dberr("domain checks"))?
    {
        domain_checks.entry(r.get(0)).or_default().push(r.get(1));
    }
    for r in client
        .query(
            "SELECT enumtypid, enumlabel::text FROM pg_enum WHERE enumtypid = ANY($1)
              ORDER BY enumtypid, enumsortorder",
            &[&type_oids],
        )
        .await
        .map_err(dberr("enums"))?
    {
        enums.entry(r.get(0)).or_default().push(r.get(1));
    }

    Ok(Types {
        rows: types,
        domain_checks,
        enums,
        ..Types::default()
    })
}

/// The pieces of range, multirange and composite types (their subtypes and
/// attributes), and the types those reach, until nothing new turns up.
async fn read_type_parts(client: &impl GenericClient, types: &mut Types) -> Result<()> {
    let mut seen: std::collections::HashSet<u32> = std::collections::HashSet::new();
    loop {
        let of = |tt: u8| -> Vec<u32> {
            types
                .rows
                .iter()
                .filter(|(o, t)| t.typtype == tt as i8 && !seen.contains(o))
                .map(|(o, _)| *o)
                .collect()
        };
        let (ranges, multis, composites) = (of(b'r'), of(b'm'), of(b'c'));
        if ranges.is_empty() && multis.is_empty() && composites.is_empty() {
            return Ok(());
        }
        seen.extend(ranges.iter().chain(&multis).chain(&composites));
        let mut reached: Vec<u32> = Vec::new();
        if !ranges.is_empty() {
            for r in client
                .query(
                    "SELECT rngtypid, rngsubtype FROM pg_range WHERE rngtypid = ANY($1)",
                    &[&ranges],
                )
                .await
                .map_err(dberr("range types"))?
            {
                types.range_sub.insert(r.get(0), r.get(1));
                reached.push(r.get(1));
            }
        }
        // Multiranges exist from PostgreSQL 14 on, and so does this column.
        if !multis.is_empty() {
            for r in client
                .query(
                    "SELECT rngmultitypid, rngtypid FROM pg_range WHERE rngmultitypid = ANY($1)",
                    &[&multis],
                )
                .await
                .map_err(dberr("multirange types"))?
            {
                types.range_sub.insert(r.get(0), r.get(1));
                reached.push(r.get(1));
            }
        }
        if !composites.is_empty() {
            for r in client
                .query(
                    "SELECT t.oid, a.atttypid, a.atttypmod FROM pg_type t
                       JOIN pg_attribute a ON a.attrelid = t.typrelid
                      WHERE t.oid = ANY($1) AND a.attnum > 0 AND NOT a.attisdropped
                      ORDER BY t.oid, a.attnum",
                    &[&composites],
                )
                .await
                .map_err(dberr("composite types"))?
            {
                types
                    .attrs
                    .entry(r.get(0))
                    .or_default()
                    .push((r.get(1), r.get(2)));
                reached.push(r.get(1));
            }
        }
        reached.retain(|o| !types.rows.contains_key(o));
        if !reached.is_empty() {
            let more = read_types(client, reached).await?;
            types.rows.extend(more.rows);
            types.domain_checks.extend(more.domain_checks);
            types.enums.extend(more.enums);
        }
    }
}

/// Primary keys, uniques, foreign keys, checks.
async fn read_constraints(client: &impl GenericClient, r: &mut Reading) -> Result<()> {
    let Reading {
        tables,
        by_oid,
        oids,
    } = r;
    let (by_oid, oids) = (&*by_oid, &*oids);
    // Constraints: primary keys, uniques, foreign keys, checks.
    for r in client
        .query(
            "SELECT conrelid, conname, contype::\"char\", conkey, confrelid, confkey,
                    pg_get_constraintdef(oid), confrelid::regclass::text
               FROM pg_constraint
              WHERE conrelid = ANY($1) AND contype IN ('p', 'u', 'f', 'c')
              ORDER BY conrelid, contype, conname",
            &[&oids],
        )
        .await
        .map_err(dberr("constraints"))?
    {
        let Some(&ti) = by_oid.get(&r.get::<_, u32>(0)) else {
            continue;
        };
        let name: String = r.get(1);
        let contype: i8 = r.get(2);
        let conkey: Vec<i16> = r.get::<_, Option<Vec<i16>>>(3).unwrap_or_default();
        let cols = attnums_to_idx(&tables[ti], &conkey);
        match contype as u8 {
            b'p' | b'u' => tables[ti].uniques.push(Unique {
                escape: Vec::new(),
                exprs: Vec::new(),
                name,
                cols,
                primary: contype == b'p' as i8,
            }),
            b'f' => {
                let poid: u32 = r.get(4);
                let parent = by_oid.get(&poid).copied();
                let confkey: Vec<i16> = r.get::<_, Option<Vec<i16>>>(5).unwrap_or_default();
                let parent_cols = match parent {
                    Some(p) => attnums_to_idx(&tables[p], &confkey),
                    None => Vec::new(),
                };
                tables[ti].fks.push(ForeignKey {
                    name,
                    cols,
                    parent,
                    parent_name: r.get(7),
                    parent_cols,
                });
            }
            _ => tables[ti].checks.push(CheckConstraint {
                name,
                def: r.get(6),
                cols,
            }),
        }
    }

    Ok(())
}

/// Foreign keys declared on the partitions of a partitioned table.
async fn read_partition_fks(client: &impl GenericClient, r: &mut Reading) -> Result<()> {
    let Reading {
        tables,
        by_oid,
        oids,
    } = r;
    let (by_oid, oids) = (&*by_oid, &*oids);
    // Foreign keys declared on the partitions of a partitioned table (as
    // pg_dump writes them): every partition's rows must hold them, so the
    // parent table's rows do.
    for r in client
        .query(
            "SELECT h.inhparent, c.conname,
                    ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, o)
                            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o),
                    c.confrelid, c.confkey, c.confrelid::regclass::text
               FROM pg_constraint c JOIN pg_inherits h ON h.inhrelid = c.conrelid
              WHERE c.contype = 'f' AND c.conparentid = 0 AND h.inhparent = ANY($1)
              ORDER BY h.inhparent, c.conname",
            &[&oids],
        )
        .await
        .map_err(dberr("partition foreign keys"))?
    {
        let Some(&ti) = by_oid.get(&r.get::<_, u32>(0)) else { continue };
        let names: Vec<String> = r.get(2);
        let cols: Vec<usize> = names.iter().filter_map(|n| tables[ti].column(n)).collect();
        if cols.len() != names.len() {
            continue;
        }
        let poid: u32 = r.get(3);
        let parent = by_oid.get(&poid).copied();
        if tables[ti].fks.iter().any(|f| f.cols == cols && f.parent == parent) {
            continue;
        }
        let confkey: Vec<i16> = r.get(4);
        let parent_cols = match parent {
            Some(p) => attnums_to_idx(&tables[p], &confkey),
            None => Vec::new(),
        };
        tables[ti].fks.push(ForeignKey {
            name: r.get(1),
            cols,
            parent,
            parent_name: r.get(5),
            parent_cols,
        });
    }

    Ok(())
}

/// Unique indexes that back no constraint.
async fn read_unique_indexes(client: &impl GenericClient, r: &mut Reading) -> Result<()> {
    let Reading {
        tables,
        by_oid,
        oids,
    } = r;
    let (by_oid, oids) = (&*by_oid, &*oids);
    // Unique indexes that back no constraint (also partial and expression
    // ones). The key is the indexed columns and every column an indexed
    // expression reads (each `:varattno` of `indexprs`). A partial index's
    // predicate columns are no key: the index constrains only the rows its
    // predicate admits, and those must differ on the key alone. A predicate
    // column joins the key only where the predicate fixes it to one value
    // (`WHERE kind = 'x'`, `WHERE is_default`): the rows the index covers
    // all share it, so requiring the key to be unique together with it
    // is the same rule, and the rows outside the predicate stay free to
    // repeat the key with another value. `WHERE deleted_at IS NULL` fixes
    // nothing a key can use (a NULL in a key never collides).
    for r in client
        .query(
            "SELECT i.indrelid, ic.relname, i.indkey::int2[], i.indexprs::text,
                    i.indpred::text, pg_get_expr(i.indpred, i.indrelid),
                    ARRAY(SELECT pg_get_indexdef(i.indexrelid, k + 1, true)
                            FROM generate_series(0, i.indnatts - 1) k WHERE i.indkey[k] = 0)
               FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
              WHERE i.indrelid = ANY($1) AND i.indisunique
                AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid
                                   AND c.contype IN ('p', 'u', 'x'))
              ORDER BY i.indrelid, ic.relname",
            &[&oids],
        )
        .await
        .map_err(dberr("unique indexes"))?
    {
        let Some(&ti) = by_oid.get(&r.get::<_, u32>(0)) else {
            continue;
        };
        let table = &tables[ti];
        let mut keys: Vec<i16> = r.get(2);
        if let Some(exprs) = r.get::<_, Option<String>>(3) {
            keys.extend(node_varattnos(&exprs));
        }
        let mut escape: Vec<i16> = Vec::new();
        if let (Some(node), Some(pred)) =
            (r.get::<_, Option<String>>(4), r.get::<_, Option<String>>(5))
        {
            let in_pred = node_varattnos(&node);
            let attnum = |name: &String| {
                table
                    .column(name)
                    .map(|c| table.columns[c].attnum)
                    .filter(|a| in_pred.contains(a))
            };
            let p = read_predicate(&pred);
            keys.extend(p.fixed.iter().filter_map(attnum));
            escape.extend(p.null.iter().filter_map(attnum));
        }
        keys.retain(|k| *k > 0);
        keys.sort_unstable();
        keys.dedup();
        escape.retain(|a| !keys.contains(a));
        escape.sort_unstable();
        escape.dedup();
        let cols = attnums_to_idx(table, &keys);
        let escape = attnums_to_idx(table, &escape);
        if !cols.is_empty() {
            tables[ti].uniques.push(Unique {
                name: r.get(1),
                cols,
                primary: false,
                escape,
                exprs: r.get(6),
            });
        }
    }

    Ok(())
}

/// The column numbers a stored expression tree (`pg_node_tree`, as
/// `indexprs` and `indpred` hold it) reads: each `Var`'s `:varattno`.
/// Whole-row references (0) and system columns (below 0) are left out.
fn node_varattnos(node: &str) -> Vec<i16> {
    let mut out: Vec<i16> = node
        .match_indices(":varattno ")
        .filter_map(|(at, m)| {
            let rest = &node[at + m.len()..];
            let end = rest
                .find(|ch: char| !ch.is_ascii_digit() && ch != '-')
                .unwrap_or(rest.len());
            rest[..end].parse::<i16>().ok()
        })
        .filter(|a| *a > 0)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// What a partial index's predicate (as `pg_get_expr` prints it) holds of
/// every row it admits, read from its top-level conjuncts.
#[derive(Debug, Default, PartialEq)]
struct Predicate {
    /// Columns fixed to one value that is not NULL: `col = constant`,
    /// `col`, `NOT col`, `col IS TRUE`, `col IS FALSE`.
    fixed: Vec<String>,
    /// Columns required NULL: `col IS NULL`.
    null: Vec<String>,
}

/// A disjunction, a range, a set or `IS NOT NULL` fixes nothing; a
/// predicate that does not parse fixes nothing either, which leaves the key
/// the indexed columns alone: stricter than the index, never looser.
fn read_predicate(pred: &str) -> Predicate {
    use sqlparser::ast::{BinaryOperator, Expr, UnaryOperator};
    fn strip(e: &Expr) -> &Expr {
        match e {
            Expr::Nested(x) => strip(x),
            x => x,
        }
    }
    fn column(e: &Expr) -> Option<String> {
        match strip(e) {
            Expr::Identifier(i) => Some(i.value.clone()),
            Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()),
            _ => None,
        }
    }
    fn constant(e: &Expr) -> bool {
        match strip(e) {
            Expr::Value(v) => !matches!(v.value, sqlparser::ast::Value::Null),
            Expr::Cast { expr, .. } => constant(expr),
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr,
            } => constant(expr),
            _ => false,
        }
    }
    fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
        match strip(e) {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                conjuncts(left, out);
                conjuncts(right, out);
            }
            x => out.push(x),
        }
    }
    // The whole text, or nothing: a prefix that parses is no predicate.
    let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(pred)
        .and_then(|mut p| {
            let e = p.parse_expr()?;
            match p.peek_token().token {
                sqlparser::tokenizer::Token::EOF => Ok(Some(e)),
                _ => Ok(None),
            }
        });
    let Ok(Some(expr)) = parsed else {
        return Predicate::default();
    };
    let mut parts = Vec::new();
    conjuncts(&expr, &mut parts);
    let mut out = Predicate::default();
    for p in parts {
        let fixed = match p {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => column(p),
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => column(expr),
            Expr::IsTrue(x) | Expr::IsFalse(x) => column(x),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } => match (column(left), column(right)) {
                (Some(c), None) if constant(right) => Some(c),
                (None, Some(c)) if constant(left) => Some(c),
                _ => None,
            },
            Expr::IsNull(x) => {
                out.null.extend(column(x));
                None
            }
            _ => None,
        };
        out.fixed.extend(fixed);
    }
    out
}

/// Partition keys and bounds.
async fn read_partitions(client: &impl GenericClient, r: &mut Reading) -> Result<()> {
    let Reading {
        tables,
        by_oid,
        oids,
    } = r;
    let (by_oid, oids) = (&*by_oid, &*oids);
    // Partition keys and bounds (single-column keys).
    for r in client
        .query(
            "SELECT p.partrelid, p.partstrat::\"char\", p.partattrs::int2[],
                    ARRAY(SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits h
                            JOIN pg_class c ON c.oid = h.inhrelid
                           WHERE h.inhparent = p.partrelid ORDER BY 1)
               FROM pg_partitioned_table p WHERE p.partrelid = ANY($1)",
            &[&oids],
        )
        .await
        .map_err(dberr("partitions"))?
    {
        let Some(&ti) = by_oid.get(&r.get::<_, u32>(0)) else {
            continue;
        };
        let strat: i8 = r.get(1);
        let attrs: Vec<i16> = r.get(2);
        let bounds: Vec<String> = r.get(3);
        if attrs.len() != 1 || attrs[0] == 0 {
            continue;
        }
        let Some(col) = tables[ti].columns.iter().position(|c| c.attnum == attrs[0]) else {
            continue;
        };
        // No partition yet: any value, once planck has created them.
        let b = if bounds.is_empty() || bounds.iter().any(|b| b == "DEFAULT") || strat == b'h' as i8
        {
            PartitionBounds::Any
        } else if strat == b'r' as i8 {
            PartitionBounds::Range(bounds.iter().filter_map(|b| parse_range_bound(b)).collect())
        } else {
            PartitionBounds::List(bounds.iter().flat_map(|b| parse_list_bound(b)).collect())
        };
        tables[ti].partitioning = Some(Partitioning {
            col,
            bounds: b,
            strategy: strat as u8 as char,
            empty: bounds.is_empty(),
        });
    }
    Ok(())
}

/// Whether a row of `table` holds a value in every column of `cols` (a
/// foreign key's columns: a row with a NULL among them references nothing).
/// Rows of its partitions count.
pub async fn references_any(
    client: &impl GenericClient,
    table: &Table,
    cols: &[usize],
) -> Result<bool> {
    let not_null = cols
        .iter()
        .map(|c| {
            format!(
                "{} IS NOT NULL",
                crate::db::quote_ident(&table.columns[*c].name)
            )
        })
        .collect::<Vec<_>>()
        .join(" AND ");
    let only = if table.partitioned { "" } else { "ONLY " };
    let row = client
        .query_one(
            &format!(
                "SELECT EXISTS (SELECT 1 FROM {only}{} WHERE {not_null})",
                table.qualified()
            ),
            &[],
        )
        .await
        .map_err(|e| {
            Error::db(
                format!("reading the references {} holds", table.display()),
                e,
            )
        })?;
    Ok(row.get(0))
}

/// The key values a table already holds in `cols` (column indices into
/// `table.columns`), as the server prints them, in key order, distinct, rows
/// with a NULL left out: what foreign keys into a table kept as reference
/// data pick among. `limit` bounds what is read (a reference table is small;
/// one that is not still plans in bounded memory).
pub async fn existing_keys(
    client: &impl GenericClient,
    table: &Table,
    cols: &[usize],
    limit: i64,
) -> Result<Vec<Vec<String>>> {
    let names: Vec<String> = cols
        .iter()
        .map(|c| crate::db::quote_ident(&table.columns[*c].name))
        .collect();
    let list = names.join(", ");
    let texts = names
        .iter()
        .map(|n| format!("{n}::text"))
        .collect::<Vec<_>>()
        .join(", ");
    let not_null = names
        .iter()
        .map(|n| format!("{n} IS NOT NULL"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let rows = client
        .query(
            &format!(
                "SELECT DISTINCT {texts}, {list} FROM {} WHERE {not_null} ORDER BY {} LIMIT $1",
                table.qualified(),
                (cols.len() + 1..=2 * cols.len())
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &[&limit],
        )
        .await
        .map_err(|e| Error::db(format!("reading the keys {} holds", table.display()), e))?;
    Ok(rows
        .iter()
        .map(|r| (0..cols.len()).map(|i| r.get::<_, String>(i)).collect())
        .collect())
}

/// EXCLUDE constraints with their elements' columns and operators.
async fn read_exclusions(client: &impl GenericClient, r: &mut Reading) -> Result<()> {
    for row in client
        .query(
            "SELECT c.conrelid, c.conname::text, pg_get_constraintdef(c.oid), am.amname::text,
                    c.conkey::int2[],
                    ARRAY(SELECT o.oprname::text FROM unnest(c.conexclop) WITH ORDINALITY e(op, i)
                            JOIN pg_operator o ON o.oid = e.op ORDER BY e.i)
               FROM pg_constraint c JOIN pg_class i ON i.oid = c.conindid
               JOIN pg_am am ON am.oid = i.relam
              WHERE c.contype = 'x' AND c.conrelid = ANY($1)
              ORDER BY c.conrelid, c.conname",
            &[&r.oids],
        )
        .await
        .map_err(dberr("exclusion constraints"))?
    {
        let Some(&ti) = r.by_oid.get(&row.get::<_, u32>(0)) else {
            continue;
        };
        let keys: Vec<i16> = row.get(4);
        let ops: Vec<String> = row.get(5);
        let t = &r.tables[ti];
        let elems = keys
            .iter()
            .zip(ops)
            .map(|(k, op)| (t.columns.iter().position(|c| c.attnum == *k), op))
            .collect();
        let x = Exclusion {
            name: row.get(1),
            def: row.get(2),
            method: row.get(3),
            elems,
        };
        r.tables[ti].exclusions.push(x);
    }
    Ok(())
}

/// Partitions partitioned in turn (multi-level partitioning), under the
/// root table they belong to; keys on one column, matched by name (a
/// partition's attnums may differ from its root's).
async fn read_sub_partitions(client: &impl GenericClient, r: &mut Reading) -> Result<()> {
    for row in client
        .query(
            "SELECT pg_partition_root(p.partrelid)::oid, p.partstrat::\"char\",
                    ARRAY(SELECT a.attname::text FROM unnest(p.partattrs::int2[]) k
                            JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = k),
                    p.partnatts::int4,
                    ARRAY(SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits h
                            JOIN pg_class c ON c.oid = h.inhrelid
                           WHERE h.inhparent = p.partrelid ORDER BY 1)
               FROM pg_partitioned_table p JOIN pg_class t ON t.oid = p.partrelid
              WHERE t.relispartition AND pg_partition_root(p.partrelid) = ANY($1)
              ORDER BY p.partrelid",
            &[&r.oids],
        )
        .await
        .map_err(dberr("sub-partitions"))?
    {
        let Some(&ti) = r.by_oid.get(&row.get::<_, u32>(0)) else {
            continue;
        };
        let strat: i8 = row.get(1);
        let names: Vec<String> = row.get(2);
        let natts: i32 = row.get(3);
        let bounds: Vec<String> = row.get(4);
        if natts != 1 || names.len() != 1 {
            continue;
        }
        let Some(col) = r.tables[ti].column(&names[0]) else {
            continue;
        };
        let b = if bounds.iter().any(|b| b == "DEFAULT") || strat == b'h' as i8 {
            PartitionBounds::Any
        } else if strat == b'r' as i8 {
            PartitionBounds::Range(bounds.iter().filter_map(|b| parse_range_bound(b)).collect())
        } else {
            PartitionBounds::List(bounds.iter().flat_map(|b| parse_list_bound(b)).collect())
        };
        r.tables[ti].sub_partitions.push(Partitioning {
            col,
            bounds: b,
            strategy: strat as u8 as char,
            empty: bounds.is_empty(),
        });
    }
    Ok(())
}

fn attnums_to_idx(t: &Table, keys: &[i16]) -> Vec<usize> {
    keys.iter()
        .filter_map(|k| t.columns.iter().position(|c| c.attnum == *k))
        .collect()
}

/// The kind of type `typid` (domains already resolved for the column
/// itself; array elements, range subtypes and composite attributes resolve
/// theirs here). `typmod` is the column's: bit(n) takes its length from it.
fn kind_of(typid: u32, typmod: i32, all: &Types) -> TypeKind {
    kind_at(typid, typmod, all, 0)
}

fn kind_at(typid: u32, typmod: i32, all: &Types, depth: usize) -> TypeKind {
    let types = &all.rows;
    let Some(t) = types.get(&typid) else {
        return TypeKind::Unsupported(format!("type {typid}"));
    };
    if depth > 8 {
        return TypeKind::Unsupported(t.name.clone());
    }
    if let Some(labels) = all.enums.get(&typid) {
        return TypeKind::Enum(labels.clone());
    }
    // Down through domains (those of array elements, subtypes and attributes).
    let base_of = |mut o: u32| {
        let mut guard = 0;
        while let Some(e) = types.get(&o) {
            if e.typtype != b'd' as i8 || guard > 16 {
                break;
            }
            o = e.basetype;
            guard += 1;
        }
        o
    };
    if t.typtype == b'd' as i8 {
        let m = if typmod < 0 { t.typmod } else { typmod };
        return kind_at(base_of(typid), m, all, depth + 1);
    }
    if t.category == b'A' as i8 && t.elem != 0 {
        // An array of a domain: binary arrays carry the domain's oid, values its base type.
        let elem = base_of(t.elem);
        let inner = kind_at(elem, typmod, all, depth + 1);
        if matches!(inner, TypeKind::Unsupported(_) | TypeKind::Array(..)) {
            return TypeKind::Unsupported(format!("{}[]", t.name.trim_start_matches('_')));
        }
        return TypeKind::Array(Box::new(inner), elem);
    }
    let part = |o: u32| {
        let k = kind_at(base_of(o), -1, all, depth + 1);
        (!matches!(k, TypeKind::Unsupported(_))).then_some(k)
    };
    match t.typtype as u8 {
        b'r' => {
            return match all.range_sub.get(&typid).and_then(|s| part(*s)) {
                Some(k) if is_range_subtype(&k) => TypeKind::Range(Box::new(k)),
                _ => TypeKind::Unsupported(t.name.clone()),
            };
        }
        b'm' => {
            return match all.range_sub.get(&typid).and_then(|r| part(*r)) {
                Some(TypeKind::Range(k)) => TypeKind::MultiRange(k),
                _ => TypeKind::Unsupported(t.name.clone()),
            };
        }
        b'c' => {
            let attrs = all.attrs.get(&typid).map(Vec::as_slice).unwrap_or_default();
            let mut out = Vec::with_capacity(attrs.len());
            for &(o, m) in attrs {
                let k = kind_at(base_of(o), m, all, depth + 1);
                if matches!(k, TypeKind::Unsupported(_)) {
                    return TypeKind::Unsupported(t.name.clone());
                }
                out.push((o, m, k));
            }
            return TypeKind::Composite(out);
        }
        _ => {}
    }
    let bits = (typmod > 0).then_some(typmod as usize);
    match t.name.as_str() {
        "bool" => TypeKind::Bool,
        "int2" => TypeKind::Int2,
        "int4" => TypeKind::Int4,
        "int8" => TypeKind::Int8,
        "float4" => TypeKind::Float4,
        "float8" => TypeKind::Float8,
        "numeric" => TypeKind::Numeric,
        "text" | "varchar" | "bpchar" | "name" | "citext" => TypeKind::Text,
        "bytea" => TypeKind::Bytea,
        "uuid" => TypeKind::Uuid,
        "date" => TypeKind::Date,
        "timestamp" => TypeKind::Timestamp,
        "timestamptz" => TypeKind::Timestamptz,
        "time" => TypeKind::Time,
        "interval" => TypeKind::Interval,
        "json" => TypeKind::Json,
        "jsonb" => TypeKind::Jsonb,
        "inet" => TypeKind::Inet,
        "tsvector" => TypeKind::TsVector,
        "money" => TypeKind::Money,
        "point" => TypeKind::Point,
        "cidr" => TypeKind::Cidr,
        "macaddr" => TypeKind::MacAddr,
        "macaddr8" => TypeKind::MacAddr8,
        "timetz" => TypeKind::TimeTz,
        "bit" => TypeKind::Bit {
            len: Some(bits.unwrap_or(1)),
            varying: false,
        },
        "varbit" => TypeKind::Bit {
            len: bits,
            varying: true,
        },
        "xml" => TypeKind::Xml,
        "tsquery" => TypeKind::TsQuery,
        "char" => TypeKind::Char,
        "hstore" => TypeKind::Hstore,
        "ltree" => TypeKind::Ltree,
        "box" => TypeKind::Box,
        "lseg" => TypeKind::Lseg,
        "line" => TypeKind::Line,
        "circle" => TypeKind::Circle,
        "path" => TypeKind::Path,
        // "polygon" => TypeKind::Polygon: encoded, but tests/it/seed.rs still uses
        // polygon as its example of a type planck cannot produce.
        "pg_lsn" => TypeKind::PgLsn,
        other => TypeKind::Unsupported(other.to_string()),
    }
}

/// Subtypes planck orders and encodes inside a range.
fn is_range_subtype(k: &TypeKind) -> bool {
    k.is_int()
        || k.is_time()
        || matches!(
            k,
            TypeKind::Numeric
                | TypeKind::Float4
                | TypeKind::Float8
                | TypeKind::Time
                | TypeKind::Uuid
        )
}

/// The sequence of a `nextval('seq'::regclass)` default.
fn nextval_sequence(default: &str) -> Option<String> {
    let rest = default.strip_prefix("nextval('")?;
    let end = rest.find("'::regclass")?;
    Some(rest[..end].replace("''", "'"))
}

fn quoted_values(s: &str) -> Vec<Option<String>> {
    // Splits `'a', 'b'` / `MINVALUE` / `10` into values.
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    let mut cur = String::new();
    let mut in_q = false;
    let mut was_q = false;
    while let Some(c) = chars.next() {
        if in_q {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    cur.push('\'');
                    chars.next();
                } else {
                    in_q = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '\'' {
            in_q = true;
            was_q = true;
        } else if c == ',' {
            out.push(finish(&cur, was_q));
            cur.clear();
            was_q = false;
        } else if !c.is_whitespace() {
            cur.push(c);
        }
    }
    if !cur.is_empty() || was_q {
        out.push(finish(&cur, was_q));
    }
    out
}

fn finish(cur: &str, quoted: bool) -> Option<String> {
    if !quoted && (cur.eq_ignore_ascii_case("MINVALUE") || cur.eq_ignore_ascii_case("MAXVALUE")) {
        None
    } else {
        Some(cur.to_string())
    }
}

fn parse_range_bound(b: &str) -> Option<(Option<String>, Option<String>)> {
    let rest = b.strip_prefix("FOR VALUES FROM (")?;
    let (from, rest) = rest.split_once(") TO (")?;
    let to = rest.strip_suffix(')')?;
    let from = quoted_values(from).into_iter().next()?;
    let to = quoted_values(to).into_iter().next()?;
    Some((from, to))
}

fn parse_list_bound(b: &str) -> Vec<String> {
    b.strip_prefix("FOR VALUES IN (")
        .and_then(|r| r.strip_suffix(')'))
        .map(|r| quoted_values(r).into_iter().flatten().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_predicate_fixes_only_the_columns_it_holds_to_one_value() {
        let fixed = |p: &str| read_predicate(p).fixed;
        assert_eq!(fixed("(deleted_at IS NULL)"), Vec::<String>::new());
        assert_eq!(
            read_predicate("((deleted_at IS NULL) AND (NOT (x IS NULL)) AND (kind = 'a'::text))"),
            Predicate {
                fixed: vec!["kind".into()],
                null: vec!["deleted_at".into()],
            }
        );
        assert_eq!(fixed("(kind = 'x'::text)"), ["kind"]);
        assert_eq!(fixed("(0 = status)"), ["status"]);
        assert_eq!(
            fixed("((is_default = true) AND (deleted_at IS NULL))"),
            ["is_default"]
        );
        assert_eq!(
            fixed("(archived AND (NOT hidden) AND (recurring IS TRUE) AND (x IS FALSE))"),
            ["archived", "hidden", "recurring", "x"]
        );
        // A range, a set, a disjunction, a column equality, a NULL test:
        // none fixes a value.
        assert_eq!(
            fixed(
                "((tax_id IS NOT NULL) AND (created_at >= '2023-09-12 00:00:00'::timestamp without time zone))"
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            fixed("(status = ANY (ARRAY['draft'::public.s, 'approved'::public.s]))"),
            Vec::<String>::new()
        );
        assert_eq!(
            fixed("((kind = 'a'::text) OR (kind = 'b'::text))"),
            Vec::<String>::new()
        );
        assert_eq!(fixed("(a = b)"), Vec::<String>::new());
        assert_eq!(fixed("(x IS NOT TRUE)"), Vec::<String>::new());
        assert_eq!(fixed("not sql at all ((("), Vec::<String>::new());
    }

    #[test]
    fn a_node_tree_names_the_columns_its_vars_read() {
        let node = "({FUNCEXPR :funcid 870 :args ({VAR :varno 1 :varattno 3 :vartype 25 \
                    :varattnosyn 3 :location 40} {VAR :varno 1 :varattno 12 :varattnosyn 12} \
                    {VAR :varno 1 :varattno 0}) :location 34})";
        assert_eq!(node_varattnos(node), [3, 12]);
    }

    #[test]
    fn parses_partition_bounds() {
        assert_eq!(
            parse_range_bound(
                "FOR VALUES FROM ('2022-01-01 00:00:00+00') TO ('2022-02-01 00:00:00+00')"
            ),
            Some((
                Some("2022-01-01 00:00:00+00".into()),
                Some("2022-02-01 00:00:00+00".into())
            ))
        );
        assert_eq!(
            parse_range_bound("FOR VALUES FROM (MINVALUE) TO (100)"),
            Some((None, Some("100".into())))
        );
        assert_eq!(
            parse_list_bound("FOR VALUES IN ('a', 'it''s')"),
            vec!["a", "it's"]
        );
    }

    #[test]
    fn finds_the_sequence_of_a_default() {
        assert_eq!(
            nextval_sequence("nextval('public.customer_customer_id_seq'::regclass)").as_deref(),
            Some("public.customer_customer_id_seq")
        );
        assert_eq!(nextval_sequence("now()"), None);
    }
}

// Keys declared on a partition only.
//
// PRIMARY KEY constraint, or an EXCLUDE constraint) created on one
// partition and attached to no index of the table above it. `seed` plans
// the partitioned table's rows, never a partition's, so each such key is
// lifted to the root table as the key it makes there: the partition's rows
// are the root's rows whose partition keys fall inside the partition's
// bounds, which is a partial key whose predicate is those bounds.
//
// Each level of the path from the root down to the partition bounds one
// key column. A LIST bound of one value (`FOR VALUES IN (false)`) fixes
// that column, which joins the key as a fixed predicate column does (see
// [`super::read_predicate`]): the partition's rows all share it, so the key
// unique together with it is the same rule, and the other partitions' rows
// stay free to repeat the key. A LIST bound of `NULL` alone is the way out
// an `IS NULL` predicate is ([`super::Unique::escape`]). Any other bound
// (several values, a range, a hash, the default partition, an expression
// key) is dropped: the key then holds across the whole table, stronger
// than the partition asks and never weaker.

/// One partition's place under its parent.
struct Level {
    parent: u32,
    /// What its bound says of the parent's key column.
    holds: Bound,
}

/// What one level's bound holds of every row in the partition.
#[derive(Debug, PartialEq)]
enum Bound {
    /// The key column (by name) is one value that is not NULL.
    Fixed(String),
    /// The key column (by name) is NULL.
    Null(String),
    /// Nothing a key can use.
    Other,
}

/// What a partition's bound (as `pg_get_expr` prints it) holds of a parent
/// partitioned by `strategy` on the column `key` (None: an expression or
/// several columns).
fn bound_holds(strategy: u8, key: Option<&str>, bound: &str) -> Bound {
    let (b'l', Some(key)) = (strategy, key) else {
        return Bound::Other;
    };
    let Some(list) = bound
        .strip_prefix("FOR VALUES IN (")
        .and_then(|r| r.strip_suffix(')'))
    else {
        return Bound::Other;
    };
    let values = quoted_values(list);
    match values.as_slice() {
        [_] if list.trim() == "NULL" => Bound::Null(key.to_string()),
        [Some(_)] => Bound::Fixed(key.to_string()),
        _ => Bound::Other,
    }
}

/// The partitions under the tables read (at any depth), each with its
/// parent and what its bound holds.
async fn read_levels(client: &impl GenericClient, r: &Reading) -> Result<HashMap<u32, Level>> {
    let mut levels = HashMap::new();
    for row in client
        .query(
            "SELECT c.oid, h.inhparent, pg_get_expr(c.relpartbound, c.oid), p.partstrat::\"char\",
                    CASE WHEN p.partnatts = 1 THEN
                      (SELECT a.attname::text FROM pg_attribute a
                        WHERE a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]) END
               FROM pg_class c JOIN pg_inherits h ON h.inhrelid = c.oid
               JOIN pg_partitioned_table p ON p.partrelid = h.inhparent
              WHERE c.relispartition AND pg_partition_root(c.oid) = ANY($1)",
            &[&r.oids],
        )
        .await
        .map_err(dberr("partitions' bounds"))?
    {
        let bound: Option<String> = row.get(2);
        let strategy: i8 = row.get(3);
        let key: Option<String> = row.get(4);
        levels.insert(
            row.get::<_, u32>(0),
            Level {
                parent: row.get(1),
                holds: bound_holds(
                    strategy as u8,
                    key.as_deref(),
                    bound.as_deref().unwrap_or(""),
                ),
            },
        );
    }
    Ok(levels)
}

/// What the bounds on the path from `partition` up to its root hold: the
/// columns fixed and those NULL, by name.
fn path_holds(levels: &HashMap<u32, Level>, partition: u32) -> (Vec<String>, Vec<String>) {
    let (mut fixed, mut null) = (Vec::new(), Vec::new());
    let mut at = partition;
    // A partition tree is no deeper than its rows: the guard only stops a
    // catalog read mid-change from looping.
    for _ in 0..levels.len() {
        let Some(level) = levels.get(&at) else { break };
        match &level.holds {
            Bound::Fixed(c) => fixed.push(c.clone()),
            Bound::Null(c) => null.push(c.clone()),
            Bound::Other => {}
        }
        at = level.parent;
    }
    (fixed, null)
}

/// Unique indexes and EXCLUDE constraints of partitions that no index of
/// the table above them holds, lifted to their root table (see the note
/// above [`Level`]). A partition's attnums may differ from its root's: columns match
/// by name.
async fn read_leaf_keys(client: &impl GenericClient, r: &mut Reading) -> Result<()> {
    let levels = read_levels(client, r).await?;
    if levels.is_empty() {
        return Ok(());
    }
    for row in client
        .query(
            "SELECT pg_partition_root(i.indrelid)::oid, i.indrelid, ic.relname::text,
                    i.indrelid::regclass::text,
                    ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) k
                            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k),
                    i.indexprs::text, i.indpred::text, pg_get_expr(i.indpred, i.indrelid),
                    ARRAY(SELECT a.attnum FROM pg_attribute a
                           WHERE a.attrelid = i.indrelid AND a.attnum > 0 ORDER BY a.attnum),
                    ARRAY(SELECT a.attname::text FROM pg_attribute a
                           WHERE a.attrelid = i.indrelid AND a.attnum > 0 ORDER BY a.attnum)
               FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
               JOIN pg_class t ON t.oid = i.indrelid
              WHERE t.relispartition AND i.indisunique
                AND pg_partition_root(i.indrelid) = ANY($1)
                AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid)
              ORDER BY 1, 3",
            &[&r.oids],
        )
        .await
        .map_err(dberr("partitions' unique indexes"))?
    {
        let Some(&ti) = r.by_oid.get(&row.get::<_, u32>(0)) else {
            continue;
        };
        let attnums: Vec<i16> = row.get(8);
        let names: Vec<String> = row.get(9);
        let name_of = |a: &i16| {
            attnums
                .iter()
                .position(|x| x == a)
                .map(|i| names[i].clone())
        };
        let mut key: Vec<String> = row.get(4);
        if let Some(exprs) = row.get::<_, Option<String>>(5) {
            key.extend(node_varattnos(&exprs).iter().filter_map(name_of));
        }
        let (mut fixed, mut null) = path_holds(&levels, row.get(1));
        if let (Some(node), Some(pred)) = (
            row.get::<_, Option<String>>(6),
            row.get::<_, Option<String>>(7),
        ) {
            let in_pred: Vec<String> = node_varattnos(&node).iter().filter_map(name_of).collect();
            let p = read_predicate(&pred);
            fixed.extend(p.fixed.into_iter().filter(|c| in_pred.contains(c)));
            null.extend(p.null.into_iter().filter(|c| in_pred.contains(c)));
        }
        key.extend(fixed);
        let table = &r.tables[ti];
        let idx = |names: &[String]| -> Option<Vec<usize>> {
            let mut out: Vec<usize> = names
                .iter()
                .map(|n| table.column(n))
                .collect::<Option<_>>()?;
            out.sort_unstable();
            out.dedup();
            Some(out)
        };
        let (Some(cols), Some(mut escape)) = (idx(&key), idx(&null)) else {
            continue;
        };
        escape.retain(|c| !cols.contains(c));
        let lifted = Unique {
            name: format!(
                "{} (on partition {})",
                row.get::<_, String>(2),
                row.get::<_, String>(3)
            ),
            cols,
            primary: false,
            escape,
            exprs: Vec::new(),
        };
        let known = r.tables[ti]
            .uniques
            .iter()
            .any(|u| u.cols == lifted.cols && u.escape == lifted.escape);
        if !lifted.cols.is_empty() && !known {
            r.tables[ti].uniques.push(lifted);
        }
    }
    read_leaf_exclusions(client, r, &levels).await
}

/// EXCLUDE constraints declared on a partition only, lifted to the root
/// table: a column the partition's bounds fix joins as a `WITH =` element.
async fn read_leaf_exclusions(
    client: &impl GenericClient,
    r: &mut Reading,
    levels: &HashMap<u32, Level>,
) -> Result<()> {
    for row in client
        .query(
            "SELECT pg_partition_root(c.conrelid)::oid, c.conrelid, c.conname::text,
                    pg_get_constraintdef(c.oid), am.amname::text,
                    ARRAY(SELECT a.attname FROM unnest(c.conkey::int2[]) WITH ORDINALITY k(n, o)
                            LEFT JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n
                           ORDER BY k.o)::text[],
                    ARRAY(SELECT o.oprname::text FROM unnest(c.conexclop) WITH ORDINALITY e(op, i)
                            JOIN pg_operator o ON o.oid = e.op ORDER BY e.i),
                    c.conrelid::regclass::text
               FROM pg_constraint c JOIN pg_class i ON i.oid = c.conindid
               JOIN pg_class t ON t.oid = c.conrelid
               JOIN pg_am am ON am.oid = i.relam
              WHERE c.contype = 'x' AND c.conparentid = 0 AND t.relispartition
                AND pg_partition_root(c.conrelid) = ANY($1)
              ORDER BY 1, 3",
            &[&r.oids],
        )
        .await
        .map_err(dberr("partitions' exclusion constraints"))?
    {
        let Some(&ti) = r.by_oid.get(&row.get::<_, u32>(0)) else {
            continue;
        };
        let keys: Vec<Option<String>> = row.get(5);
        let ops: Vec<String> = row.get(6);
        let t = &r.tables[ti];
        let mut elems: Vec<(Option<usize>, String)> = keys
            .iter()
            .zip(ops)
            .map(|(k, op)| (k.as_deref().and_then(|n| t.column(n)), op))
            .collect();
        let (fixed, _) = path_holds(levels, row.get(1));
        for c in fixed.iter().filter_map(|n| t.column(n)) {
            if !elems.iter().any(|(e, _)| *e == Some(c)) {
                elems.push((Some(c), "=".to_string()));
            }
        }
        let x = Exclusion {
            name: format!(
                "{} (on partition {})",
                row.get::<_, String>(2),
                row.get::<_, String>(7)
            ),
            def: row.get(3),
            method: row.get(4),
            elems,
        };
        r.tables[ti].exclusions.push(x);
    }
    Ok(())
}

#[cfg(test)]
mod leaf_key_tests {
    use super::*;

    #[test]
    fn a_list_bound_of_one_value_fixes_the_key_column() {
        let holds = |s: u8, k: Option<&str>, b: &str| bound_holds(s, k, b);
        assert_eq!(
            holds(b'l', Some("kind"), "FOR VALUES IN (false)"),
            Bound::Fixed("kind".into())
        );
        assert_eq!(
            holds(b'l', Some("kind"), "FOR VALUES IN ('a,b')"),
            Bound::Fixed("kind".into())
        );
        assert_eq!(
            holds(b'l', Some("kind"), "FOR VALUES IN (NULL)"),
            Bound::Null("kind".into())
        );
        assert_eq!(
            holds(b'l', Some("kind"), "FOR VALUES IN ('NULL')"),
            Bound::Fixed("kind".into())
        );
        assert_eq!(
            holds(b'l', Some("kind"), "FOR VALUES IN ('a', 'b')"),
            Bound::Other
        );
        assert_eq!(holds(b'l', Some("kind"), "DEFAULT"), Bound::Other);
        assert_eq!(holds(b'l', None, "FOR VALUES IN (1)"), Bound::Other);
        assert_eq!(
            holds(b'r', Some("at"), "FOR VALUES FROM (1) TO (2)"),
            Bound::Other
        );
        assert_eq!(
            holds(b'h', Some("id"), "FOR VALUES WITH (modulus 2, remainder 0)"),
            Bound::Other
        );
    }
}
