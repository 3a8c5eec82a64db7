//! Request bodies, read field by field so that every problem names its field: the OpenAI
//! fields gpuport honours, those it accepts because they cannot change the output (`user`,
//! `metadata` …), those it refuses unless they are at their neutral value (`n`, `tools`,
//! `logprobs`, `presence_penalty` …), and gpuport's own fields (`top_k`, `repeat_penalty`,
//! `priority`, `session`, `task`, `preemptible`; the `openai` client's `extra_body`). Any other
//! field is refused: nothing that could change a reply is silently ignored.

use gpuport_llm::Message;
use gpuport_scheduler::Priority;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// Which endpoint a body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/chat/completions`: `messages`.
    Chat,
    /// `POST /v1/completions`: `prompt`.
    Completion,
}

/// What to complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Chat messages (text content), rendered with the model's chat template.
    Messages(Vec<Message>),
    /// A text prompt, tokenized as-is (BOS by the model's rule, control-token text parsed).
    Text(String),
    /// A prompt already in token ids.
    Tokens(Vec<u32>),
}

/// A parsed, checked request body.
#[derive(Debug, Clone, PartialEq)]
pub struct GenRequest {
    /// `model`; `None` is the first model served.
    pub model: Option<String>,
    /// `messages` or `prompt`.
    pub input: Input,
    /// `max_completion_tokens`, else `max_tokens`, with the name of the field that set it.
    pub max_tokens: Option<(usize, &'static str)>,
    /// `temperature` (0..=2).
    pub temperature: Option<f32>,
    /// `top_p` (0, 1].
    pub top_p: Option<f32>,
    /// `top_k` (0 = off).
    pub top_k: Option<u32>,
    /// `repeat_penalty` (> 0, 1 = off).
    pub repeat_penalty: Option<f32>,
    /// `seed`.
    pub seed: Option<u64>,
    /// `stop`: strings that end the reply (excluded from it).
    pub stop: Vec<String>,
    /// `stream`.
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// `priority`.
    pub priority: Priority,
    /// `session`.
    pub session: Option<String>,
    /// `task`.
    pub task: Option<String>,
    /// `preemptible`.
    pub preemptible: bool,
}

/// The most stop strings a request may give.
pub const MAX_STOP: usize = 16;

/// Parses and checks a request body for `endpoint`.
pub fn parse(endpoint: Endpoint, body: &[u8]) -> Result<GenRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?;
    let Value::Object(map) = value else {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    };
    let mut f = Fields { map };
    let input = match endpoint {
        Endpoint::Chat => Input::Messages(messages(f.take("messages"))?),
        Endpoint::Completion => prompt(f.take("prompt"))?,
    };
    let model = f.string("model")?;
    let max_tokens = f.count("max_tokens")?.map(|n| (n, "max_tokens"));
    let max_completion = f
        .count("max_completion_tokens")?
        .map(|n| (n, "max_completion_tokens"));
    let temperature = f.number("temperature")?;
    if let Some(t) = temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(ApiError::bad_field(
            "temperature",
            format!("must be between 0 and 2, got {t}"),
        ));
    }
    let top_p = f.number("top_p")?;
    if let Some(p) = top_p
        && !(p > 0.0 && p <= 1.0)
    {
        return Err(ApiError::bad_field(
            "top_p",
            format!("must be in (0, 1], got {p}"),
        ));
    }
    let top_k = match f.integer("top_k")? {
        Some(k) if !(0..=i64::from(u32::MAX)).contains(&k) => {
            return Err(ApiError::bad_field(
                "top_k",
                format!("must be 0 (off) or more, got {k}"),
            ));
        }
        k => k.map(|k| k as u32),
    };
    let repeat_penalty = f.number("repeat_penalty")?;
    if let Some(r) = repeat_penalty
        && !(r > 0.0 && r.is_finite())
    {
        return Err(ApiError::bad_field(
            "repeat_penalty",
            format!("must be above 0 (1 = off), got {r}"),
        ));
    }
    // Any 64-bit integer: OpenAI's seeds are signed, the sampler's unsigned.
    let seed = match f.take("seed") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Some(u),
            (None, Some(i)) => Some(i as u64),
            _ => return Err(ApiError::bad_field("seed", "expected an integer")),
        },
        Some(_) => return Err(ApiError::bad_field("seed", "expected an integer")),
    };
    let stop = stop(f.take("stop"))?;
    let stream = f.boolean("stream")?.unwrap_or(false);
    let include_usage = stream_options(f.take("stream_options"), stream)?;
    let priority = match f.take("priority") {
        None | Some(Value::Null) => Priority::Normal,
        Some(Value::String(s)) => match s.as_str() {
            "interactive" => Priority::Interactive,
            "normal" => Priority::Normal,
            "background" => Priority::Background,
            other => {
                return Err(ApiError::bad_field(
                    "priority",
                    format!(
                        "expected \"interactive\", \"normal\" or \"background\", got {other:?}"
                    ),
                ));
            }
        },
        Some(_) => {
            return Err(ApiError::bad_field(
                "priority",
                "expected \"interactive\", \"normal\" or \"background\"",
            ));
        }
    };
    let session = f.label("session")?;
    let task = f.label("task")?;
    let preemptible = f.boolean("preemptible")?.unwrap_or(false);
    f.neutral(endpoint)?;
    f.accepted();
    if let Some(key) = f.map.keys().next() {
        return Err(ApiError::bad_field(
            key,
            "unknown field (gpuport refuses what it does not honour rather than ignore it)",
        )
        .code("unsupported_field"));
    }
    Ok(GenRequest {
        model,
        input,
        max_tokens: max_completion.or(max_tokens),
        temperature: temperature.map(|t| t as f32),
        top_p: top_p.map(|p| p as f32),
        top_k,
        repeat_penalty: repeat_penalty.map(|r| r as f32),
        seed,
        stop,
        stream,
        include_usage,
        priority,
        session,
        task,
        preemptible,
    })
}

/// The body's fields not yet read.
struct Fields {
    map: Map<String, Value>,
}

fn expected(field: &str, what: &str, got: &Value) -> ApiError {
    ApiError::bad_field(field, format!("expected {what}, got {}", kind(got)))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Fields {
    fn take(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name)
    }

    fn string(&mut self, name: &str) -> Result<Option<String>, ApiError> {
        match self.take(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(expected(name, "a string", &v)),
        }
    }

    /// A non-empty string of at most 256 bytes (a session or task key).
    fn label(&mut self, name: &str) -> Result<Option<String>, ApiError> {
        let s = self.string(name)?;
        if let Some(s) = &s
            && (s.is_empty() || s.len() > 256)
        {
            return Err(ApiError::bad_field(name, "must be 1 to 256 bytes"));
        }
        Ok(s)
    }

    fn boolean(&mut self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.take(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(v) => Err(expected(name, "a boolean", &v)),
        }
    }

    fn number(&mut self, name: &str) -> Result<Option<f64>, ApiError> {
        match self.take(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| ApiError::bad_field(name, "expected a finite number")),
            Some(v) => Err(expected(name, "a number", &v)),
        }
    }

    fn integer(&mut self, name: &str) -> Result<Option<i64>, ApiError> {
        match self.take(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) => Ok(Some(i)),
                None => Err(ApiError::bad_field(
                    name,
                    format!("expected an integer, got {n}"),
                )),
            },
            Some(v) => Err(expected(name, "an integer", &v)),
        }
    }

    /// A token count: an integer of at least 1.
    fn count(&mut self, name: &str) -> Result<Option<usize>, ApiError> {
        match self.integer(name)? {
            Some(n) if n < 1 => Err(ApiError::bad_field(
                name,
                format!("must be at least 1, got {n}"),
            )),
            n => Ok(n.map(|n| n as usize)),
        }
    }

    /// OpenAI fields gpuport does not implement: accepted at their neutral value (the one
    /// that changes nothing), refused otherwise, naming the field.
    fn neutral(&mut self, endpoint: Endpoint) -> Result<(), ApiError> {
        let unsupported = |field: &str, what: &str| {
            Err(
                ApiError::bad_field(field, format!("{what} is not supported"))
                    .code("unsupported_field"),
            )
        };
        for field in ["presence_penalty", "frequency_penalty"] {
            if let Some(p) = self.number(field)?
                && p != 0.0
            {
                return unsupported(
                    field,
                    &format!("{field} {p} (the sampler has repeat_penalty instead)"),
                );
            }
        }
        if let Some(n) = self.integer("n")?
            && n != 1
        {
            return unsupported("n", &format!("n = {n} (one choice per request)"));
        }
        match endpoint {
            Endpoint::Chat => {
                if self.boolean("logprobs")? == Some(true) {
                    return unsupported("logprobs", "logprobs");
                }
                if let Some(k) = self.integer("top_logprobs")?
                    && k != 0
                {
                    return unsupported("top_logprobs", "top_logprobs");
                }
            }
            Endpoint::Completion => {
                if self.integer("logprobs")?.is_some_and(|k| k != 0) {
                    return unsupported("logprobs", "logprobs");
                }
                if self.boolean("echo")? == Some(true) {
                    return unsupported("echo", "echo");
                }
                if let Some(n) = self.integer("best_of")?
                    && n != 1
                {
                    return unsupported("best_of", &format!("best_of = {n}"));
                }
                if self.string("suffix")?.is_some() {
                    return unsupported("suffix", "suffix (insertion)");
                }
            }
        }
        // Absent, null, or empty: nothing asked for.
        for field in ["tools", "functions", "logit_bias"] {
            match self.take(field) {
                None | Some(Value::Null) => {}
                Some(Value::Array(a)) if a.is_empty() => {}
                Some(Value::Object(o)) if o.is_empty() => {}
                Some(_) => return unsupported(field, field),
            }
        }
        for field in ["tool_choice", "function_call"] {
            match self.take(field) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s == "none" => {}
                Some(_) => return unsupported(field, field),
            }
        }
        match self.take("response_format") {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) if o.len() == 1 && o.get("type") == Some(&"text".into()) => {}
            Some(_) => return unsupported("response_format", "a response_format other than text"),
        }
        match self.take("modalities") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) if a.iter().all(|m| m == "text") => {}
            Some(_) => return unsupported("modalities", "an output modality other than text"),
        }
        for field in [
            "audio",
            "prediction",
            "reasoning_effort",
            "verbosity",
            "web_search_options",
        ] {
            match self.take(field) {
                None | Some(Value::Null) => {}
                Some(_) => return unsupported(field, field),
            }
        }
        Ok(())
    }

    /// Fields that cannot change a reply: accepted, and not used.
    fn accepted(&mut self) {
        for field in [
            "user",
            "metadata",
            "store",
            "service_tier",
            "parallel_tool_calls",
            "safety_identifier",
            "prompt_cache_key",
        ] {
            self.map.remove(field);
        }
    }
}

fn messages(value: Option<Value>) -> Result<Vec<Message>, ApiError> {
    let list = match value {
        None | Some(Value::Null) => {
            return Err(ApiError::bad_field("messages", "required"));
        }
        Some(Value::Array(a)) => a,
        Some(v) => return Err(expected("messages", "an array of messages", &v)),
    };
    if list.is_empty() {
        return Err(ApiError::bad_field("messages", "at least one message"));
    }
    list.into_iter()
        .enumerate()
        .map(|(i, m)| message(i, m))
        .collect()
}

fn message(i: usize, value: Value) -> Result<Message, ApiError> {
    let at = |k: &str| format!("messages[{i}].{k}");
    let Value::Object(mut m) = value else {
        return Err(expected(&format!("messages[{i}]"), "an object", &value));
    };
    let role = match m.remove("role") {
        Some(Value::String(r)) => r,
        None => return Err(ApiError::bad_field(&at("role"), "required")),
        Some(v) => return Err(expected(&at("role"), "a string", &v)),
    };
    let role = match role.as_str() {
        "system" | "developer" => "system",
        "user" => "user",
        "assistant" => "assistant",
        "tool" | "function" => {
            return Err(ApiError::bad_field(
                &at("role"),
                format!("{role} messages are not supported (no tool calling)"),
            )
            .code("unsupported_field"));
        }
        other => {
            return Err(ApiError::bad_field(
                &at("role"),
                format!("expected system, developer, user or assistant, got {other:?}"),
            ));
        }
    };
    let content = match m.remove("content") {
        None | Some(Value::Null) => {
            return Err(ApiError::bad_field(&at("content"), "required"));
        }
        Some(Value::String(s)) => s,
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (j, part) in parts.into_iter().enumerate() {
                texts.push(text_part(&at(&format!("content[{j}]")), part)?);
            }
            texts.join("\n")
        }
        Some(v) => {
            return Err(expected(
                &at("content"),
                "a string or an array of text parts",
                &v,
            ));
        }
    };
    for (key, v) in m {
        match (key.as_str(), &v) {
            ("refusal", Value::Null) => {}
            ("tool_calls", Value::Null) => {}
            ("tool_calls", Value::Array(a)) if a.is_empty() => {}
            ("name", _) => {
                return Err(ApiError::bad_field(
                    &at("name"),
                    "participant names are not supported (the chat template has no place for them)",
                )
                .code("unsupported_field"));
            }
            ("tool_calls" | "function_call" | "audio", _) => {
                return Err(
                    ApiError::bad_field(&at(&key), "not supported").code("unsupported_field")
                );
            }
            _ => {
                return Err(
                    ApiError::bad_field(&at(&key), "unknown field").code("unsupported_field")
                );
            }
        }
    }
    Ok(Message {
        role: role.to_owned(),
        content,
    })
}

fn text_part(at: &str, part: Value) -> Result<String, ApiError> {
    let Value::Object(mut p) = part else {
        return Err(expected(at, "a content part object", &part));
    };
    match p.remove("type") {
        Some(Value::String(t)) if t == "text" => {}
        Some(Value::String(t)) => {
            return Err(ApiError::bad_field(
                &format!("{at}.type"),
                format!("{t} content is not supported (text only)"),
            )
            .code("unsupported_field"));
        }
        _ => {
            return Err(ApiError::bad_field(
                &format!("{at}.type"),
                "expected \"text\"",
            ));
        }
    }
    let text = match p.remove("text") {
        Some(Value::String(s)) => s,
        Some(v) => return Err(expected(&format!("{at}.text"), "a string", &v)),
        None => return Err(ApiError::bad_field(&format!("{at}.text"), "required")),
    };
    if let Some(key) = p.keys().next() {
        return Err(
            ApiError::bad_field(&format!("{at}.{key}"), "unknown field").code("unsupported_field")
        );
    }
    Ok(text)
}

fn prompt(value: Option<Value>) -> Result<Input, ApiError> {
    let token = |i: usize, v: &Value| -> Result<u32, ApiError> {
        v.as_u64()
            .and_then(|t| u32::try_from(t).ok())
            .ok_or_else(|| expected(&format!("prompt[{i}]"), "a token id", v))
    };
    match value {
        None | Some(Value::Null) => Err(ApiError::bad_field("prompt", "required")),
        Some(Value::String(s)) => Ok(Input::Text(s)),
        Some(Value::Array(items)) => match items.as_slice() {
            [] => Err(ApiError::bad_field("prompt", "empty")),
            [Value::String(s)] => Ok(Input::Text(s.clone())),
            [Value::Array(ids)] => Ok(Input::Tokens(
                ids.iter()
                    .enumerate()
                    .map(|(i, v)| token(i, v))
                    .collect::<Result<_, _>>()?,
            )),
            [Value::Number(_), ..] => Ok(Input::Tokens(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| token(i, v))
                    .collect::<Result<_, _>>()?,
            )),
            [Value::String(_) | Value::Array(_), ..] => Err(ApiError::bad_field(
                "prompt",
                format!("{} prompts in one request (one per request)", items.len()),
            )
            .code("unsupported_field")),
            [v, ..] => Err(expected(
                "prompt",
                "a string, token ids, or a list of one of them",
                v,
            )),
        },
        Some(v) => Err(expected("prompt", "a string or token ids", &v)),
    }
}

fn stop(value: Option<Value>) -> Result<Vec<String>, ApiError> {
    let list = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![Value::String(s)],
        Some(Value::Array(a)) => a,
        Some(v) => return Err(expected("stop", "a string or an array of strings", &v)),
    };
    if list.len() > MAX_STOP {
        return Err(ApiError::bad_field(
            "stop",
            format!("at most {MAX_STOP} stop strings, got {}", list.len()),
        ));
    }
    list.into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) if !s.is_empty() => Ok(s),
            Value::String(_) => Err(ApiError::bad_field(&format!("stop[{i}]"), "empty string")),
            v => Err(expected(&format!("stop[{i}]"), "a string", &v)),
        })
        .collect()
}

fn stream_options(value: Option<Value>, stream: bool) -> Result<bool, ApiError> {
    let map = match value {
        None | Some(Value::Null) => return Ok(false),
        Some(Value::Object(m)) => m,
        Some(v) => return Err(expected("stream_options", "an object", &v)),
    };
    if !stream {
        return Err(ApiError::bad_field(
            "stream_options",
            "only allowed when stream is true",
        ));
    }
    let mut usage = false;
    for (k, v) in map {
        match (k.as_str(), v) {
            ("include_usage", Value::Bool(b)) => usage = b,
            ("include_usage", Value::Null) => {}
            ("include_usage", v) => {
                return Err(expected("stream_options.include_usage", "a boolean", &v));
            }
            // Padding against length side channels: the text is unchanged.
            ("include_obfuscation", Value::Bool(_) | Value::Null) => {}
            (k, _) => {
                return Err(
                    ApiError::bad_field(&format!("stream_options.{k}"), "unknown field")
                        .code("unsupported_field"),
                );
            }
        }
    }
    Ok(usage)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn chat(body: serde_json::Value) -> Result<GenRequest, ApiError> {
        parse(Endpoint::Chat, body.to_string().as_bytes())
    }

    fn param(r: Result<GenRequest, ApiError>) -> String {
        let e = r.unwrap_err();
        assert_eq!(e.status().as_u16(), 400, "{e}");
        e.body()["error"]["param"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    #[test]
    fn a_full_chat_body_parses() {
        let r = chat(serde_json::json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            ],
            "max_tokens": 9, "max_completion_tokens": 5, "temperature": 0, "top_p": 0.5,
            "seed": -1, "stop": "x", "stream": true, "stream_options": {"include_usage": true},
            "n": 1, "presence_penalty": 0, "top_k": 4, "repeat_penalty": 1.1,
            "priority": "background", "session": "s", "task": "t", "preemptible": true,
            "user": "u", "tools": [], "logprobs": false,
        }))
        .unwrap();
        assert_eq!(r.max_tokens, Some((5, "max_completion_tokens")));
        assert_eq!(r.seed, Some(u64::MAX));
        assert_eq!(r.stop, vec!["x".to_owned()]);
        assert!(r.stream && r.include_usage && r.preemptible);
        assert_eq!(r.priority, Priority::Background);
        assert_eq!(
            r.input,
            Input::Messages(vec![
                Message::new("system", "be brief"),
                Message::new("user", "a\nb")
            ])
        );
    }

    #[test]
    fn every_problem_names_its_field() {
        let m = serde_json::json!([{"role": "user", "content": "hi"}]);
        let cases = [
            (serde_json::json!({}), "messages"),
            (serde_json::json!({"messages": []}), "messages"),
            (serde_json::json!({"messages": "hi"}), "messages"),
            (
                serde_json::json!({"messages": [{"role": "bot", "content": "x"}]}),
                "messages[0].role",
            ),
            (
                serde_json::json!({"messages": [{"role": "tool", "content": "x"}]}),
                "messages[0].role",
            ),
            (
                serde_json::json!({"messages": [{"role": "user"}]}),
                "messages[0].content",
            ),
            (
                serde_json::json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}),
                "messages[0].content[0].type",
            ),
            (
                serde_json::json!({"messages": [{"role": "user", "content": "x", "name": "a"}]}),
                "messages[0].name",
            ),
            (serde_json::json!({"messages": m, "n": 2}), "n"),
            (
                serde_json::json!({"messages": m, "tools": [{"type": "function"}]}),
                "tools",
            ),
            (
                serde_json::json!({"messages": m, "response_format": {"type": "json_object"}}),
                "response_format",
            ),
            (
                serde_json::json!({"messages": m, "logprobs": true}),
                "logprobs",
            ),
            (
                serde_json::json!({"messages": m, "temperature": "hot"}),
                "temperature",
            ),
            (
                serde_json::json!({"messages": m, "temperature": 3}),
                "temperature",
            ),
            (serde_json::json!({"messages": m, "top_p": 0}), "top_p"),
            (
                serde_json::json!({"messages": m, "max_tokens": 0}),
                "max_tokens",
            ),
            (
                serde_json::json!({"messages": m, "max_completion_tokens": 1.5}),
                "max_completion_tokens",
            ),
            (serde_json::json!({"messages": m, "stop": 3}), "stop"),
            (
                serde_json::json!({"messages": m, "stop": ["a", ""]}),
                "stop[1]",
            ),
            (
                serde_json::json!({"messages": m, "stream": "yes"}),
                "stream",
            ),
            (
                serde_json::json!({"messages": m, "stream_options": {"include_usage": true}}),
                "stream_options",
            ),
            (
                serde_json::json!({"messages": m, "presence_penalty": 0.5}),
                "presence_penalty",
            ),
            (
                serde_json::json!({"messages": m, "priority": "urgent"}),
                "priority",
            ),
            (serde_json::json!({"messages": m, "session": ""}), "session"),
            (
                serde_json::json!({"messages": m, "preemptible": 1}),
                "preemptible",
            ),
            (serde_json::json!({"messages": m, "seed": "a"}), "seed"),
            (serde_json::json!({"messages": m, "top_k": -1}), "top_k"),
            (
                serde_json::json!({"messages": m, "repeat_penalty": 0}),
                "repeat_penalty",
            ),
            (serde_json::json!({"messages": m, "min_p": 0.1}), "min_p"),
        ];
        for (body, field) in cases {
            assert_eq!(param(chat(body.clone())), field, "{body}");
        }
        assert_eq!(param(parse(Endpoint::Chat, b"{nope")), "");
        assert_eq!(param(parse(Endpoint::Chat, b"[1]")), "");
    }

    #[test]
    fn prompts_are_text_or_token_ids() {
        let p = |v: serde_json::Value| {
            parse(
                Endpoint::Completion,
                serde_json::json!({"prompt": v}).to_string().as_bytes(),
            )
        };
        assert_eq!(p("hi".into()).unwrap().input, Input::Text("hi".into()));
        assert_eq!(
            p(serde_json::json!(["hi"])).unwrap().input,
            Input::Text("hi".into())
        );
        assert_eq!(
            p(serde_json::json!([1, 2])).unwrap().input,
            Input::Tokens(vec![1, 2])
        );
        assert_eq!(
            p(serde_json::json!([[3]])).unwrap().input,
            Input::Tokens(vec![3])
        );
        assert_eq!(param(p(serde_json::json!(["a", "b"]))), "prompt");
        assert_eq!(param(p(serde_json::json!([1, -2]))), "prompt[1]");
        let echo = serde_json::json!({"prompt": "x", "echo": true}).to_string();
        assert_eq!(param(parse(Endpoint::Completion, echo.as_bytes())), "echo");
    }
}
