//! The SQLite form of an audit log, read and written in one place (feature `sqlite`).
//!
//! A log kept in SQLite is one table, [`TABLE`], with one column per [`AuditRecord`] field
//! (`args`, `result` and `import` hold canonical JSON, `tier` and `status` their snake_case
//! names). The
//! runtime's SQLite sink writes rows with [`insert_records`]; the sink's own verifier and the
//! `agents audit` commands read them back with [`for_each_record`], so a row means the same
//! record to the writer, to the sink reopening its table and to a reviewer's CLI.
//!
//! This module only maps rows to records and back; it checks nothing about the chain. Hand
//! every record to a [`ChainVerifier`](super::ChainVerifier) to learn whether the table was
//! changed behind the writer.

use super::record::{AuditRecord, AuditResult, AuditStatus};
use crate::SharedValue;
use crate::tool::Tier;
use rusqlite::{Connection, Row};
use serde_json::Value;
use std::ops::ControlFlow;

/// The table that holds the records.
pub const TABLE: &str = "audit_log";

/// The record columns in the order [`insert_records`] binds them and [`for_each_record`] reads
/// them.
pub const COLUMNS: [&str; 24] = [
    "seq",
    "ts",
    "run_id",
    "session_id",
    "request_id",
    "call_id",
    "user_id",
    "org_id",
    "role",
    "agent",
    "tool",
    "tier",
    "status",
    "reason",
    "title",
    "args",
    "args_hash",
    "result",
    "manifest_sha256",
    "prev_hash",
    "hash",
    "epoch",
    "import",
    "node",
];

/// The index of `epoch` in [`COLUMNS`]: the column a table made before keyed chains lacks.
const EPOCH: usize = 21;

/// The index of `import` in [`COLUMNS`]: the column a table made before imported tools lacks.
const IMPORT: usize = 22;

/// The index of `node` in [`COLUMNS`]: the column a table made before composites ran lacks.
const NODE: usize = 23;

/// A row that is not an audit record: the column and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column `{column}`: {detail}")]
pub struct RowError {
    /// The column that could not be read.
    pub column: &'static str,
    /// What was wrong (a type SQLite reported, JSON that does not parse, an unknown name).
    pub detail: String,
}

impl RowError {
    fn new(column: usize, detail: impl ToString) -> Self {
        RowError { column: COLUMNS[column], detail: detail.to_string() }
    }
}

/// Whether the table has the `epoch` column (tables made before keyed chains do not; their
/// records read with `epoch: None`).
pub fn has_epoch_column(conn: &Connection) -> rusqlite::Result<bool> {
    has_column(conn, COLUMNS[EPOCH])
}

/// Whether the table has the `node` column (tables made before composites ran do not; their
/// records read with `node: None`).
pub fn has_node_column(conn: &Connection) -> rusqlite::Result<bool> {
    has_column(conn, COLUMNS[NODE])
}

/// Whether the table has the `import` column (tables made before imported tools do not; their
/// records read with `import: None`).
pub fn has_import_column(conn: &Connection) -> rusqlite::Result<bool> {
    has_column(conn, COLUMNS[IMPORT])
}

fn has_column(conn: &Connection, column: &str) -> rusqlite::Result<bool> {
    conn.query_row(&format!("SELECT COUNT(*) > 0 FROM pragma_table_info('{TABLE}') WHERE name = ?1"), [column], |row| {
        row.get(0)
    })
}

/// How many rows the table holds (for a progress bar; the count can change under a writer).
pub fn count_records(conn: &Connection) -> rusqlite::Result<u64> {
    let n: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM {TABLE}"), [], |row| row.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Reads the table in `seq` order, one row at a time (memory does not grow with the table), and
/// hands `each` the row's 1-based position and the record it holds, or why it holds none.
/// `each` returns [`ControlFlow::Break`] to stop early.
///
/// An error from SQLite itself (not a database, no [`TABLE`], a read failure) ends the pass and
/// is returned; a row whose values do not make a record is handed to `each` as a [`RowError`]
/// and the pass goes on if `each` says so.
pub fn for_each_record(
    conn: &Connection,
    mut each: impl FnMut(usize, Result<AuditRecord, RowError>) -> ControlFlow<()>,
) -> rusqlite::Result<()> {
    let epoch = if has_epoch_column(conn)? { COLUMNS[EPOCH] } else { "NULL" };
    let import = if has_import_column(conn)? { COLUMNS[IMPORT] } else { "NULL" };
    let node = if has_node_column(conn)? { COLUMNS[NODE] } else { "NULL" };
    let columns = COLUMNS[..EPOCH].join(", ");
    let mut stmt = conn.prepare(&format!("SELECT {columns}, {epoch}, {import}, {node} FROM {TABLE} ORDER BY seq"))?;
    let mut rows = stmt.query([])?;
    let mut position = 0;
    while let Some(row) = rows.next()? {
        position += 1;
        if each(position, record_from_row(row)).is_break() {
            break;
        }
    }
    Ok(())
}

/// Appends `records` to the table as they are (already sealed), in one prepared statement.
/// Wrap the call in a transaction to make a batch atomic; the table's triggers, where present,
/// refuse a row that does not continue the chain. The table needs every column of
/// [`COLUMNS`] (the runtime's sink adds `epoch`, `import` and `node` to older tables when it opens them).
pub fn insert_records(conn: &Connection, records: &[AuditRecord]) -> rusqlite::Result<()> {
    let placeholders: Vec<String> = (1..=COLUMNS.len()).map(|i| format!("?{i}")).collect();
    let sql = format!("INSERT INTO {TABLE} ({}) VALUES ({})", COLUMNS.join(", "), placeholders.join(", "));
    let mut stmt = conn.prepare_cached(&sql)?;
    let too_large = |e: std::num::TryFromIntError| rusqlite::Error::ToSqlConversionFailure(Box::new(e));
    for r in records {
        stmt.execute(rusqlite::params![
            i64::try_from(r.seq).map_err(too_large)?,
            r.ts,
            r.run_id.as_str(),
            r.session_id.as_str(),
            r.request_id.as_str(),
            r.call_id.as_deref(),
            r.user_id.as_str(),
            r.org_id.as_str(),
            r.role.as_str(),
            r.agent.as_str(),
            r.tool.as_deref(),
            r.tier.map(Tier::as_str),
            r.status.as_str(),
            r.reason,
            r.title.as_deref(),
            r.args.as_deref().map(crate::canonical::to_string),
            r.args_hash,
            r.result.as_ref().map(|x| crate::canonical::to_string(&x.to_value())),
            r.manifest_sha256.as_str(),
            r.prev_hash,
            r.hash,
            r.epoch.map(i64::try_from).transpose().map_err(too_large)?,
            r.import.as_ref().map(|i| crate::canonical::to_string(&i.to_value())),
            r.node.as_ref().map(|n| crate::canonical::to_string(&n.to_value())),
        ])?;
    }
    Ok(())
}

fn record_from_row(row: &Row<'_>) -> Result<AuditRecord, RowError> {
    fn text(row: &Row<'_>, i: usize) -> Result<String, RowError> {
        row.get(i).map_err(|e| RowError::new(i, e))
    }
    fn opt(row: &Row<'_>, i: usize) -> Result<Option<String>, RowError> {
        row.get(i).map_err(|e| RowError::new(i, e))
    }
    fn json(row: &Row<'_>, i: usize) -> Result<Option<Value>, RowError> {
        opt(row, i)?.map(|t| serde_json::from_str(&t).map_err(|e| RowError::new(i, e))).transpose()
    }
    fn unsigned(row: &Row<'_>, i: usize) -> Result<Option<u64>, RowError> {
        let n: Option<i64> = row.get(i).map_err(|e| RowError::new(i, e))?;
        n.map(|n| u64::try_from(n).map_err(|_| RowError::new(i, format!("{n} is negative")))).transpose()
    }
    fn name<T: serde::de::DeserializeOwned>(i: usize, t: String) -> Result<T, RowError> {
        serde_json::from_value(Value::String(t)).map_err(|e| RowError::new(i, e))
    }
    Ok(AuditRecord {
        seq: unsigned(row, 0)?.ok_or_else(|| RowError::new(0, "is NULL"))?,
        ts: text(row, 1)?,
        run_id: text(row, 2)?.into(),
        session_id: text(row, 3)?.into(),
        request_id: text(row, 4)?.into(),
        call_id: opt(row, 5)?.map(Into::into),
        user_id: text(row, 6)?.into(),
        org_id: text(row, 7)?.into(),
        role: text(row, 8)?.into(),
        agent: text(row, 9)?.into(),
        tool: opt(row, 10)?.map(Into::into),
        tier: opt(row, 11)?.map(|t| name::<Tier>(11, t)).transpose()?,
        status: name::<AuditStatus>(12, text(row, 12)?)?,
        reason: opt(row, 13)?,
        title: opt(row, 14)?.map(Into::into),
        args: json(row, 15)?.map(SharedValue::from),
        args_hash: opt(row, 16)?,
        result: json(row, 17)?.map(AuditResult::from),
        manifest_sha256: text(row, 18)?.into(),
        prev_hash: text(row, 19)?,
        hash: text(row, 20)?,
        epoch: unsigned(row, EPOCH)?,
        import: json(row, IMPORT)?
            .map(|v| serde_json::from_value(v).map_err(|e| RowError::new(IMPORT, e)))
            .transpose()?,
        node: json(row, NODE)?.map(|v| serde_json::from_value(v).map_err(|e| RowError::new(NODE, e))).transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{ChainVerifier, EpochPolicy, GENESIS_HASH};
    use serde_json::json;

    const TABLE_SQL: &str = "CREATE TABLE audit_log (seq INTEGER PRIMARY KEY, ts TEXT NOT NULL, run_id TEXT NOT NULL, \
        session_id TEXT NOT NULL, request_id TEXT NOT NULL, call_id TEXT, user_id TEXT NOT NULL, org_id TEXT NOT NULL, \
        role TEXT NOT NULL, agent TEXT NOT NULL, tool TEXT, tier TEXT, status TEXT NOT NULL, reason TEXT, title TEXT, \
        args TEXT, args_hash TEXT, result TEXT, manifest_sha256 TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL";

    fn record(status: AuditStatus) -> AuditRecord {
        AuditRecord {
            seq: 0,
            ts: "2026-05-27T10:00:00Z".into(),
            run_id: "run-1".into(),
            session_id: "s-1".into(),
            request_id: "req-1".into(),
            call_id: Some("call-1".into()),
            epoch: None,
            user_id: "u-1".into(),
            org_id: "org-1".into(),
            role: "agent".into(),
            agent: "helpdesk".into(),
            tool: Some("refund".into()),
            tier: Some(Tier::Action),
            status,
            reason: Some("because".into()),
            title: Some("Refund".into()),
            args: Some(SharedValue::from(json!({"amount": 3, "note": "é"}))),
            args_hash: Some("ab".repeat(32)),
            result: Some(AuditResult::from(json!({"ok": true}))),
            import: None,
            manifest_sha256: "cd".repeat(32).into(),
            prev_hash: String::new(),
            hash: String::new(),
            node: None,
        }
    }

    fn chained(n: usize) -> Vec<AuditRecord> {
        let mut prev = GENESIS_HASH.to_owned();
        (0..n)
            .map(|i| {
                let mut r = record(if i % 2 == 0 { AuditStatus::Proposed } else { AuditStatus::Executed });
                r.seal(i as u64 + 1, &prev);
                prev.clone_from(&r.hash);
                r
            })
            .collect()
    }

    fn read_all(conn: &Connection) -> Vec<Result<AuditRecord, RowError>> {
        let mut out = Vec::new();
        for_each_record(conn, |_, r| {
            out.push(r);
            ControlFlow::Continue(())
        })
        .unwrap();
        out
    }

    #[test]
    fn rows_read_back_as_the_records_written_and_the_chain_verifies() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&format!("{TABLE_SQL}, epoch INTEGER, import TEXT, node TEXT)")).unwrap();
        let mut records = chained(3);
        records[2].result = None;
        records[2].tier = None;
        records[2].import = Some(crate::audit::AuditImport {
            server: "tracker".into(),
            source: Some("stdio: tracker-mcp".into()),
            tool: "create_issue".into(),
            sha256: "ef".repeat(32),
            listed_sha256: Some("01".repeat(32)),
        });
        let prev = records[1].hash.clone();
        records[2].seal(3, &prev);
        insert_records(&conn, &records).unwrap();
        let read: Vec<AuditRecord> = read_all(&conn).into_iter().map(Result::unwrap).collect();
        assert_eq!(read, records);
        let mut verifier = ChainVerifier::new().epochs(EpochPolicy::default());
        for (i, r) in read.iter().enumerate() {
            verifier.record(r, i + 1).unwrap();
        }
        assert_eq!(verifier.finish().unwrap().records, 3);
        assert_eq!(count_records(&conn).unwrap(), 3);
    }

    #[test]
    fn a_table_made_before_keyed_chains_reads_without_epochs() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&format!("{TABLE_SQL})")).unwrap();
        assert!(!has_epoch_column(&conn).unwrap());
        let records = chained(2);
        let columns = COLUMNS[..EPOCH].join(", ");
        for r in &records {
            let line: Value = serde_json::from_str(&r.to_line()).unwrap();
            let values: Vec<String> = COLUMNS[..EPOCH]
                .iter()
                .map(|c| match &line[*c] {
                    Value::Null => "NULL".to_owned(),
                    Value::String(s) => format!("'{s}'"),
                    Value::Number(n) => n.to_string(),
                    other => format!("'{}'", crate::canonical::to_string(other)),
                })
                .collect();
            conn.execute_batch(&format!("INSERT INTO audit_log ({columns}) VALUES ({})", values.join(", "))).unwrap();
        }
        let read: Vec<AuditRecord> = read_all(&conn).into_iter().map(Result::unwrap).collect();
        assert_eq!(read, records);
    }

    #[test]
    fn a_row_that_is_not_a_record_names_its_column_and_the_pass_goes_on() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&format!("{TABLE_SQL}, epoch INTEGER, import TEXT, node TEXT)")).unwrap();
        insert_records(&conn, &chained(3)).unwrap();
        conn.execute_batch("UPDATE audit_log SET status = 'teleported' WHERE seq = 2").unwrap();
        let read = read_all(&conn);
        assert_eq!(read.len(), 3);
        assert!(read[0].is_ok() && read[2].is_ok());
        let err = read[1].clone().unwrap_err();
        assert_eq!(err.column, "status");
        assert!(err.to_string().contains("teleported"), "{err}");

        conn.execute_batch("UPDATE audit_log SET epoch = -4 WHERE seq = 3").unwrap();
        assert_eq!(read_all(&conn)[2].clone().unwrap_err(), RowError::new(EPOCH, "-4 is negative"));
        conn.execute_batch("UPDATE audit_log SET args = '{not json' WHERE seq = 1").unwrap();
        assert_eq!(read_all(&conn)[0].clone().unwrap_err().column, "args");
    }

    #[test]
    fn a_break_stops_the_pass() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(&format!("{TABLE_SQL}, epoch INTEGER, import TEXT, node TEXT)")).unwrap();
        insert_records(&conn, &chained(5)).unwrap();
        let mut seen = Vec::new();
        for_each_record(&conn, |n, _| {
            seen.push(n);
            if n == 2 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        })
        .unwrap();
        assert_eq!(seen, [1, 2]);
    }

    #[test]
    fn a_database_without_the_table_is_an_sqlite_error() {
        let conn = Connection::open_in_memory().unwrap();
        let err = for_each_record(&conn, |_, _| ControlFlow::Continue(())).unwrap_err();
        assert!(err.to_string().contains("audit_log"), "{err}");
    }
}
