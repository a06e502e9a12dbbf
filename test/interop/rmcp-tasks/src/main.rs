//! An rmcp 3.11.0 client of the Tasks extension (SEP-2663), used as is: it creates tasks through
//! one Tidemark gateway and follows them through another, printing one JSON line per scenario
//! for the test that runs it. Usage: rmcp-tasks-interop <create-url> <poll-url>
//!
//! Two more modes hand a task from one process to another, as a host that restarts does:
//! `rmcp-tasks-interop start <url>` creates a long count and prints {"taskId", "created"};
//! `rmcp-tasks-interop resume <url> <task-id>` follows it to the end: {"result", "status"}.
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, Implementation, ProtocolVersion, TaskPayload, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{json, Value};

type Client = RunningService<RoleClient, ClientConfig>;

fn config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::builder()
            .enable_tasks()
            .enable_elicitation()
            .build(),
        Implementation::new("rmcp-tasks-interop", "1.0.0"),
    )
}

/// A 2026-07-28 client: `server/discover`, then self-contained requests (the stateless lane).
async fn connect(url: &str) -> anyhow::Result<Client> {
    Ok(config()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(url.to_string()),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await?)
}

/// Calls a tool and expects a task back: its id and first status.
async fn create(client: &Client, tool: &str, arguments: Value) -> anyhow::Result<(String, Value)> {
    let params = CallToolRequestParams::new(tool.to_string())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    match client.call_tool_once(params).await? {
        CallToolResponse::Task(created) => Ok((
            created.task.task_id.clone(),
            serde_json::to_value(&created)?,
        )),
        other => anyhow::bail!("expected a task, got {other:?}"),
    }
}

/// Polls `tasks/get` until `done` says so; returns the statuses seen and the last payload.
async fn poll(
    peer: &Peer<RoleClient>,
    id: &str,
    done: impl Fn(&TaskPayload) -> bool,
) -> anyhow::Result<(Vec<String>, TaskPayload)> {
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..600 {
        let got = peer.get_task(GetTaskParams::new(id.to_string())).await?;
        let status = serde_json::to_value(got.task.status())?
            .as_str()
            .unwrap_or("?")
            .to_string();
        if seen.last() != Some(&status) {
            seen.push(status);
        }
        if done(&got.task.payload) {
            return Ok((seen, got.task.payload));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("task {id} did not get there in 30 s: {seen:?}")
}

fn terminal(payload: &TaskPayload) -> bool {
    matches!(
        payload,
        TaskPayload::Completed { .. } | TaskPayload::Failed { .. } | TaskPayload::Cancelled
    )
}

fn text_of(payload: &TaskPayload) -> Value {
    match payload {
        TaskPayload::Completed { result } => result["content"][0]["text"].clone(),
        other => json!(format!("{other:?}")),
    }
}

/// `start` and `resume`: one task, created by one process and followed by another.
async fn hand_off(args: &[String]) -> anyhow::Result<()> {
    let client = connect(&args[2]).await?;
    if args[1] == "start" {
        let (id, created) = create(&client, "count", json!({ "to": 30, "delayMs": 100 })).await?;
        println!("{}", json!({ "taskId": id, "created": created["status"] }));
    } else {
        let (seen, payload) = poll(client.peer(), &args[3], terminal).await?;
        println!("{}", json!({ "result": text_of(&payload), "status": seen.last() }));
    }
    client.cancel().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args[1] == "start" || args[1] == "resume" {
        return hand_off(&args).await;
    }
    let (create_url, poll_url) = (&args[1], &args[2]);
    let a = connect(create_url).await?;
    let b = connect(poll_url).await?;
    let offers_tasks = b
        .peer_info()
        .map(|info| info.capabilities.supports_tasks())
        .unwrap_or(false);
    println!("{}", json!({ "discover": { "tasks": offers_tasks } }));

    let (id, created) = create(&a, "count", json!({ "to": 5, "delayMs": 50 })).await?;
    let (seen, payload) = poll(b.peer(), &id, terminal).await?;
    println!(
        "{}",
        json!({ "count": { "created": created, "seen": seen, "text": text_of(&payload) } })
    );

    let (id, _) = create(&a, "confirm_deploy", json!({ "env": "staging" })).await?;
    let (_, asking) = poll(b.peer(), &id, |p| {
        matches!(p, TaskPayload::InputRequired { .. }) || terminal(p)
    })
    .await?;
    let TaskPayload::InputRequired { input_requests } = asking else {
        anyhow::bail!("expected input_required, got {asking:?}")
    };
    let responses = input_requests
        .keys()
        .map(|key| (key.clone(), json!({ "action": "accept", "content": { "confirm": true } })))
        .collect();
    b.peer()
        .update_task(UpdateTaskParams::new(id.clone(), responses))
        .await?;
    let (seen, payload) = poll(a.peer(), &id, terminal).await?;
    println!(
        "{}",
        json!({ "input": { "keys": input_requests.keys().collect::<Vec<_>>(), "seen": seen, "text": text_of(&payload) } })
    );

    let (id, _) = create(&a, "count", json!({ "to": 10000, "delayMs": 20 })).await?;
    b.peer()
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await?;
    let (seen, _) = poll(a.peer(), &id, terminal).await?;
    println!("{}", json!({ "cancel": { "seen": seen } }));

    a.cancel().await?;
    b.cancel().await?;
    Ok(())
}
