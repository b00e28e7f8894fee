//! The server's request and tool counters, rendered in Prometheus's text
//! format at `/metrics`: requests by route, method and status; latency
//! histograms by route and by tool; tool calls and their failures.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Latency bucket bounds, in seconds.
const BOUNDS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Debug, Clone, Default)]
struct Histogram {
    buckets: [u64; BOUNDS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        for (bucket, bound) in self.buckets.iter_mut().zip(BOUNDS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        self.count += 1;
        self.sum += seconds;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        for (bucket, bound) in self.buckets.iter().zip(BOUNDS) {
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {bucket}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

#[derive(Debug, Default)]
struct Inner {
    requests: BTreeMap<(String, String, u16), u64>,
    request_latency: BTreeMap<String, Histogram>,
    tool_calls: BTreeMap<(String, &'static str), u64>,
    tool_latency: BTreeMap<String, Histogram>,
}

/// Counters shared by every request of one server process.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

/// Escapes a label value.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

impl Metrics {
    /// Counts one HTTP request to `route` (the route pattern, never the
    /// concrete path, so ids do not explode the label set).
    pub fn record_request(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        let mut inner = self.inner.lock().expect("metrics poisoned");
        *inner.requests.entry((route.to_string(), method.to_string(), status)).or_default() += 1;
        inner.request_latency.entry(route.to_string()).or_default().observe(elapsed);
    }

    /// Counts one tool call: `outcome` is ok, error (a result flagged
    /// `isError`), invalid (a `-32602`) or internal.
    pub fn record_tool(&self, tool: &str, outcome: &'static str, elapsed: Duration) {
        let mut inner = self.inner.lock().expect("metrics poisoned");
        *inner.tool_calls.entry((tool.to_string(), outcome)).or_default() += 1;
        inner.tool_latency.entry(tool.to_string()).or_default().observe(elapsed);
    }

    /// Appends the counters in Prometheus's text format.
    pub fn render(&self, out: &mut String) {
        let inner = self.inner.lock().expect("metrics poisoned");
        out.push_str("# HELP mempalace_http_requests_total HTTP requests by route, method and status.\n");
        out.push_str("# TYPE mempalace_http_requests_total counter\n");
        for ((route, method, status), n) in &inner.requests {
            let _ = writeln!(
                out,
                "mempalace_http_requests_total{{route=\"{}\",method=\"{method}\",status=\"{status}\"}} {n}",
                label(route)
            );
        }
        out.push_str("# HELP mempalace_http_request_duration_seconds HTTP request latency by route.\n");
        out.push_str("# TYPE mempalace_http_request_duration_seconds histogram\n");
        for (route, histogram) in &inner.request_latency {
            histogram.render(out, "mempalace_http_request_duration_seconds", &format!("route=\"{}\"", label(route)));
        }
        out.push_str("# HELP mempalace_tool_calls_total MCP tool calls by tool and outcome.\n");
        out.push_str("# TYPE mempalace_tool_calls_total counter\n");
        for ((tool, outcome), n) in &inner.tool_calls {
            let _ = writeln!(out, "mempalace_tool_calls_total{{tool=\"{}\",outcome=\"{outcome}\"}} {n}", label(tool));
        }
        out.push_str("# HELP mempalace_tool_call_duration_seconds MCP tool call latency by tool.\n");
        out.push_str("# TYPE mempalace_tool_call_duration_seconds histogram\n");
        for (tool, histogram) in &inner.tool_latency {
            histogram.render(out, "mempalace_tool_call_duration_seconds", &format!("tool=\"{}\"", label(tool)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_histograms_render_in_the_text_format() {
        let metrics = Metrics::default();
        metrics.record_request("/api/v1/drawers/{id}", "GET", 200, Duration::from_millis(3));
        metrics.record_request("/api/v1/drawers/{id}", "GET", 200, Duration::from_millis(30));
        metrics.record_request("/api/v1/drawers/{id}", "GET", 404, Duration::from_millis(1));
        metrics.record_tool("mempalace_search", "ok", Duration::from_millis(7));
        let mut text = String::new();
        metrics.render(&mut text);
        for line in [
            "mempalace_http_requests_total{route=\"/api/v1/drawers/{id}\",method=\"GET\",status=\"200\"} 2",
            "mempalace_http_requests_total{route=\"/api/v1/drawers/{id}\",method=\"GET\",status=\"404\"} 1",
            "mempalace_http_request_duration_seconds_bucket{route=\"/api/v1/drawers/{id}\",le=\"0.005\"} 2",
            "mempalace_http_request_duration_seconds_bucket{route=\"/api/v1/drawers/{id}\",le=\"+Inf\"} 3",
            "mempalace_http_request_duration_seconds_count{route=\"/api/v1/drawers/{id}\"} 3",
            "mempalace_tool_calls_total{tool=\"mempalace_search\",outcome=\"ok\"} 1",
            "mempalace_tool_call_duration_seconds_bucket{tool=\"mempalace_search\",le=\"0.01\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert_eq!(label("a\"b\\c"), "a\\\"b\\\\c");
    }
}
