//! The review page (`polymorph serve`): a local web page (127.0.0.1 by default). Runs with the metric over
//! candidates as a chart, ledger entries with a side-by-side diff and their numbers, approve and
//! reject buttons. GET never changes state; a POST must carry the page's per-process token in
//! `X-Polymorph-Token` and, when the browser sends an Origin, come from this very host, so
//! another site cannot make a reviewer's browser approve or reject anything; and every request
//! must name the page's own address in `Host` (no DNS rebinding).

use crate::measure::plot;
use crate::record::{Store, review};
use crate::view::{HistoryFilter, history_rows, show_data, show_json};
use anyhow::{Context as _, Result};
use axum::Json;
use axum::Router;
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use sandbox::CancelFlag;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

mod host;

const PAGE: &str = include_str!("../../assets/review.html");
/// How often the server looks at the cancel flag (Ctrl-C / SIGTERM) to shut down.
const SHUTDOWN_POLL: Duration = Duration::from_millis(100);

struct App {
    store: Store,
    db: PathBuf,
    ledger: PathBuf,
    token: String,
    /// The address the page listens on: requests must name it in `Host`.
    served: SocketAddr,
}

/// Refuses every request whose `Host` is not the page's own address (DNS rebinding).
async fn host_guard(State(app): Shared, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !host::allowed(host, app.served) {
        return fail(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "Host {host:?} is not this page's address ({}): refused",
                app.served
            ),
        );
    }
    next.run(req).await
}

type Shared = State<Arc<App>>;

fn fail(status: StatusCode, e: impl std::fmt::Display) -> Response {
    (status, e.to_string()).into_response()
}

fn internal(e: anyhow::Error) -> Response {
    fail(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}"))
}

async fn page(State(app): Shared) -> Html<String> {
    Html(PAGE.replace("{{TOKEN}}", &app.token))
}

async fn runs(State(app): Shared) -> Response {
    match history_rows(&app.store, &HistoryFilter::default()).await {
        Ok(rows) => Json(rows).into_response(),
        Err(e) => internal(e),
    }
}

async fn run_plot(State(app): Shared, UrlPath(id): UrlPath<i64>) -> Response {
    match app.store.plot_points(&[id]).await {
        Ok(points) => {
            let svg = plot::svg(
                &format!("run {id}: best so far vs the start, and each candidate's gain"),
                &points,
            );
            ([(header::CONTENT_TYPE, "image/svg+xml")], svg).into_response()
        }
        Err(e) => internal(e),
    }
}

async fn entries(State(app): Shared) -> Response {
    let labelled = async {
        let rows = app.store.reviews(None, None).await?;
        anyhow::Ok(app.store.simulations().await?.labelled(&rows)?)
    };
    match labelled.await {
        Ok(rows) => Json(rows).into_response(),
        Err(e) => internal(e),
    }
}

async fn candidate(State(app): Shared, UrlPath(id): UrlPath<i64>) -> Response {
    let data = match show_data(&app.store, &app.ledger, id, None).await {
        Ok(d) => d,
        Err(e) => return fail(StatusCode::NOT_FOUND, format!("{e:#}")),
    };
    match show_json(&data) {
        Ok(v) => Json(v).into_response(),
        Err(e) => internal(e),
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Decision {
    reason: Option<String>,
    by: Option<String>,
}

/// The guard on every state change: the page's token, and an Origin (if any) that is this host.
/// Why a state change is refused, or `None` when it may go ahead.
fn refusal(app: &App, headers: &HeaderMap) -> Option<String> {
    let token = headers
        .get("x-polymorph-token")
        .and_then(|v| v.to_str().ok());
    if token != Some(app.token.as_str()) {
        return Some(
            "missing or wrong X-Polymorph-Token: state changes come from the review page only"
                .into(),
        );
    }
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok())?;
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    (origin != format!("http://{host}"))
        .then(|| format!("cross-site request from {origin} refused"))
}

async fn decide(
    app: &App,
    headers: &HeaderMap,
    id: i64,
    approve: bool,
    body: Decision,
) -> Response {
    if let Some(why) = refusal(app, headers) {
        return fail(StatusCode::FORBIDDEN, why);
    }
    let entry = match app.store.entry(id).await {
        Ok(Some(e)) => e,
        Ok(None) => return fail(StatusCode::NOT_FOUND, format!("no entry e{id}")),
        Err(e) => return internal(e),
    };
    let by = review::reviewer(body.by.or_else(|| Some("review page".into())));
    let result = if approve {
        review::approve(&app.store, &app.db, &entry, &by, body.reason.as_deref())
            .await
            .map(|()| serde_json::json!({ "approved": id }))
    } else {
        review::reject(
            &app.store,
            &app.db,
            &app.ledger,
            &entry,
            &by,
            body.reason.as_deref().unwrap_or(""),
        )
        .await
        .and_then(|r| Ok(serde_json::to_value(r)?))
    };
    match result {
        Ok(v) => Json(v).into_response(),
        Err(e) => fail(StatusCode::BAD_REQUEST, format!("{e:#}")),
    }
}

async fn approve(
    State(app): Shared,
    headers: HeaderMap,
    UrlPath(id): UrlPath<i64>,
    Json(body): Json<Decision>,
) -> Response {
    decide(&app, &headers, id, true, body).await
}

async fn reject(
    State(app): Shared,
    headers: HeaderMap,
    UrlPath(id): UrlPath<i64>,
    Json(body): Json<Decision>,
) -> Response {
    decide(&app, &headers, id, false, body).await
}

/// Serves until `cancel` is set; prints the address it listens on first.
pub async fn serve(
    db: PathBuf,
    ledger: PathBuf,
    addr: SocketAddr,
    cancel: CancelFlag,
) -> Result<()> {
    let store = Store::open(&db).await?;
    let token = format!("{:032x}", rand::random::<u128>());
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    let local = listener.local_addr()?;
    let app = Arc::new(App {
        store,
        db,
        ledger,
        token,
        served: local,
    });
    let router = Router::new()
        .route("/", get(page))
        .route("/api/runs", get(runs))
        .route("/api/runs/{id}/plot.svg", get(run_plot))
        .route("/api/entries", get(entries))
        .route("/api/candidates/{id}", get(candidate))
        .route("/api/entries/{id}/approve", post(approve))
        .route("/api/entries/{id}/reject", post(reject))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            host_guard,
        ))
        .with_state(app);
    println!("polymorph review page on http://{local}/ (Ctrl-C to stop)");
    use std::io::Write as _;
    std::io::stdout().flush()?;
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            while !cancel.load(Ordering::SeqCst) {
                tokio::time::sleep(SHUTDOWN_POLL).await;
            }
        })
        .await?;
    Ok(())
}
