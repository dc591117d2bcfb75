//! `clusterNode`, `clusterNodeById`, `cnode`, `origin`, `jsonTree`, `tree`: node statistics as Sentinel's
//! `NodeVo` JSON or as text tables.

use std::fmt::Write as _;

use floodgate_core::stats::{CallTree, NodeSnapshot, TreeNodeKind};
use serde_json::{Map, Value, json};

use super::{CommandError, CommandState, Params};

const MAX_ROWS: usize = 30;

fn now_ms(state: &CommandState) -> u64 {
    state.fg.clock().now_ms()
}

/// Sentinel's `NodeVo` (rates and RT truncated to integers).
fn node_vo(n: &NodeSnapshot, timestamp: u64) -> Map<String, Value> {
    let Value::Object(map) = json!({
        "resource": &*n.name,
        "threadNum": n.cur_thread_num,
        "passQps": n.pass_qps as i64,
        "blockQps": n.block_qps as i64,
        "totalQps": n.total_qps as i64,
        "averageRt": n.avg_rt as i64,
        "successQps": n.success_qps as i64,
        "exceptionQps": n.exception_qps as i64,
        "oneMinutePass": n.one_minute_pass,
        "oneMinuteBlock": n.one_minute_block,
        "oneMinuteException": n.one_minute_exception,
        "oneMinuteTotal": n.one_minute_total,
        "timestamp": timestamp,
    }) else {
        return Map::new();
    };
    map
}

pub(crate) fn cluster_node(state: &CommandState, params: &Params) -> String {
    let not_zero = params.word("type") == Some("notZero");
    let ts = now_ms(state);
    let nodes: Vec<Value> = state
        .fg
        .cluster_nodes()
        .iter()
        .filter(|n| !not_zero || n.one_minute_total > 0)
        .map(|n| {
            let mut vo = node_vo(n, ts);
            vo.insert("id".into(), json!(&*n.name));
            Value::Object(vo)
        })
        .collect();
    Value::Array(nodes).to_string()
}

pub(crate) fn cluster_node_by_id(
    state: &CommandState,
    params: &Params,
) -> Result<String, CommandError> {
    let id = params
        .non_empty("id")
        .ok_or_else(|| CommandError::bad_request("Invalid parameter: empty clusterNode name"))?;
    let ts = now_ms(state);
    Ok(state
        .fg
        .cluster_node(id)
        .map(|view| {
            let mut vo = node_vo(&view.snapshot(id.into()), ts);
            vo.insert("id".into(), json!(id));
            Value::Object(vo).to_string()
        })
        .unwrap_or_else(|| "{}".to_owned()))
}

fn header(table: &mut String, columns: &[&str]) {
    for (i, c) in columns.iter().enumerate() {
        let _ = write!(table, "{c:<width$}", width = if i == 1 { 32 } else { 10 });
    }
    table.push('\n');
}

fn row(table: &mut String, cells: &[String]) {
    for (i, c) in cells.iter().enumerate() {
        let _ = write!(table, "{c:<width$}", width = if i == 1 { 32 } else { 10 });
    }
    table.push('\n');
}

pub(crate) fn cnode(state: &CommandState, params: &Params) -> String {
    let id = params.get("id").unwrap_or_default();
    let mut table = String::new();
    header(
        &mut table,
        &[
            "idx",
            "id",
            "thread",
            "pass",
            "blocked",
            "success",
            "total",
            "aRt",
            "1m-pass",
            "1m-block",
            "1m-all",
            "exception",
        ],
    );
    for (i, n) in state
        .fg
        .cluster_nodes()
        .iter()
        .filter(|n| n.name.contains(id))
        .take(MAX_ROWS)
        .enumerate()
    {
        row(
            &mut table,
            &[
                i.to_string(),
                n.name.to_string(),
                n.cur_thread_num.to_string(),
                (n.pass_qps as i64).to_string(),
                (n.block_qps as i64).to_string(),
                (n.success_qps as i64).to_string(),
                (n.total_qps as i64).to_string(),
                (n.avg_rt as i64).to_string(),
                n.one_minute_pass.to_string(),
                n.one_minute_block.to_string(),
                n.one_minute_total.to_string(),
                (n.exception_qps as i64).to_string(),
            ],
        );
    }
    table
}

pub(crate) fn origin(state: &CommandState, params: &Params) -> String {
    let id = params.get("id").unwrap_or_default();
    let names = state.fg.resource_names();
    let found = names
        .iter()
        .find(|n| &***n == id)
        .or_else(|| names.iter().find(|n| !id.is_empty() && n.contains(id)));
    let Some(resource) = found else {
        return format!("Not find cNode with id {id}");
    };
    let mut table = format!("id: {resource}\n");
    header(
        &mut table,
        &[
            "idx",
            "origin",
            "threadNum",
            "passQps",
            "blockQps",
            "totalQps",
            "aRt",
            "1m-pass",
            "1m-block",
            "1m-total",
        ],
    );
    for (i, n) in state
        .fg
        .origin_nodes(resource)
        .iter()
        .take(MAX_ROWS)
        .enumerate()
    {
        row(
            &mut table,
            &[
                i.to_string(),
                n.name.to_string(),
                n.cur_thread_num.to_string(),
                (n.pass_qps as i64).to_string(),
                (n.block_qps as i64).to_string(),
                (n.total_qps as i64).to_string(),
                (n.avg_rt as i64).to_string(),
                n.one_minute_pass.to_string(),
                n.one_minute_block.to_string(),
                n.one_minute_total.to_string(),
            ],
        );
    }
    table
}

pub(crate) fn json_tree(state: &CommandState) -> String {
    let ts = now_ms(state);
    let mut out = Vec::new();
    let mut next_id = 0u64;
    fn walk(
        node: &CallTree,
        parent: Option<u64>,
        next_id: &mut u64,
        ts: u64,
        out: &mut Vec<Value>,
    ) {
        *next_id += 1;
        let id = *next_id;
        let mut vo = node_vo(&node.stats, ts);
        vo.insert("id".into(), json!(format!("{id:016x}")));
        if let Some(p) = parent {
            vo.insert("parentId".into(), json!(format!("{p:016x}")));
        }
        out.push(Value::Object(vo));
        for child in &node.children {
            walk(child, Some(id), next_id, ts, out);
        }
    }
    walk(&state.fg.call_tree(), None, &mut next_id, ts, &mut out);
    Value::Array(out).to_string()
}

fn stats_text(n: &NodeSnapshot) -> String {
    format!(
        "(t:{} pq:{} bq:{} tq:{} rt:{} prq:{} 1mp:{} 1mb:{} 1mt:{})",
        n.cur_thread_num,
        n.pass_qps as i64,
        n.block_qps as i64,
        n.total_qps as i64,
        n.avg_rt as i64,
        n.pass_qps as i64,
        n.one_minute_pass,
        n.one_minute_block,
        n.one_minute_total
    )
}

pub(crate) fn tree(state: &CommandState, params: &Params) -> String {
    let root = state.fg.call_tree();
    let id = params.non_blank("id");
    let entrances: Vec<&CallTree> = match id {
        None => root.children.iter().collect(),
        Some(id) => {
            let exact: Vec<&CallTree> = root
                .children
                .iter()
                .filter(|c| &*c.stats.name == id)
                .collect();
            if exact.is_empty() {
                root.children
                    .iter()
                    .filter(|c| c.stats.name.contains(id))
                    .collect()
            } else {
                exact
            }
        }
    };
    let mut out = String::new();
    fn walk(node: &CallTree, depth: usize, out: &mut String) {
        let label = match node.kind {
            TreeNodeKind::Entrance => "EntranceNode: ",
            _ => "",
        };
        let _ = writeln!(
            out,
            "{}{label}{}{}",
            "-".repeat(depth),
            node.stats.name,
            stats_text(&node.stats)
        );
        for child in &node.children {
            walk(child, depth + 1, out);
        }
    }
    for entrance in entrances {
        walk(entrance, 0, &mut out);
    }
    out.push_str(
        "\nt:threadNum  pq:passQps  bq:blockQps  tq:totalQps  rt:averageRt  prq: passRequestQps 1mp:1m-pass 1mb:1m-block 1mt:1m-total\n",
    );
    out
}
