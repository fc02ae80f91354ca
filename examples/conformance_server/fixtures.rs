//! The fixtures both eras share: content blocks, prompts, resources, and
//! the tool definitions (each era lists the tools it can serve, in a fixed
//! order, `test_simple_text` first: the suite calls the first tool with no
//! arguments).

use serde_json::{json, Value};

/// A 1×1 PNG.
pub const IMG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV.
pub const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

pub fn text(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

/// A tool result with one text block.
pub fn text_result(text: &str) -> Value {
    json!({ "content": [self::text(text)] })
}

fn tool(name: &str, description: &str, input_schema: Value) -> Value {
    json!({ "name": name, "description": description, "inputSchema": input_schema })
}

fn no_args() -> Value {
    json!({ "type": "object", "properties": {} })
}

/// The JSON Schema 2020-12 fixture, as the suite expects it.
fn schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": { "address": { "$anchor": "addressDef", "type": "object", "properties": {
            "street": { "type": "string" }, "city": { "type": "string" } } } },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" },
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false,
    })
}

/// The input schema of the tool with a mirrored (`x-mcp-header`) parameter.
pub fn header_echo_schema() -> Value {
    json!({ "type": "object", "properties": {
        "region": { "type": "string", "description": "Region", "x-mcp-header": "Region" },
    }, "required": ["region"] })
}

/// The tools both eras serve.
fn common() -> Vec<Value> {
    vec![
        tool(
            "test_simple_text",
            "Returns a simple text response.",
            no_args(),
        ),
        tool("test_image_content", "Returns an image.", no_args()),
        tool("test_audio_content", "Returns audio.", no_args()),
        tool(
            "test_embedded_resource",
            "Returns an embedded resource.",
            no_args(),
        ),
        tool(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
            no_args(),
        ),
        tool(
            "test_tool_with_logging",
            "Sends three log messages, then answers.",
            no_args(),
        ),
        tool(
            "test_tool_with_progress",
            "Reports progress three times, then answers.",
            no_args(),
        ),
        tool("test_error_handling", "Returns a tool error.", no_args()),
        tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
            schema_2020_12(),
        ),
    ]
}

/// The legacy era's tools: the shared ones, and those that ask the client
/// (sampling, elicitation) or resume a stream.
pub fn legacy_tools() -> Vec<Value> {
    let mut tools = common();
    tools.extend([
        tool(
            "test_sampling",
            "Asks the client's model to answer a prompt (sampling).",
            json!({ "type": "object", "properties": {
                "prompt": { "type": "string", "description": "The prompt to send to the LLM" } },
                "required": ["prompt"] }),
        ),
        tool(
            "test_elicitation",
            "Asks the user for information (elicitation).",
            json!({ "type": "object", "properties": {
                "message": { "type": "string", "description": "The message to show the user" } },
                "required": ["message"] }),
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Elicits a form whose fields have defaults (SEP-1034).",
            no_args(),
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Elicits a form of every enum kind (SEP-1330).",
            no_args(),
        ),
        tool(
            "test_reconnection",
            "Closes its SSE stream mid-call; the answer arrives on the resumed stream.",
            no_args(),
        ),
    ]);
    tools
}

/// The modern era's tools: the shared ones, and the input-required
/// (multi-round-trip) and header fixtures.
pub fn modern_tools() -> Vec<Value> {
    let mut tools = common();
    for (name, description) in [
        (
            "test_missing_capability",
            "Needs the client's sampling capability.",
        ),
        (
            "test_streaming_elicitation",
            "Answers over a stream (no requests to the client).",
        ),
        (
            "test_logging_tool",
            "Logs only when the request asks for a log level.",
        ),
        (
            "test_input_required_result_elicitation",
            "Asks for the user's name (input required).",
        ),
        (
            "test_input_required_result_sampling",
            "Asks the client's model a question (input required).",
        ),
        (
            "test_input_required_result_list_roots",
            "Asks for the client's roots (input required).",
        ),
        (
            "test_input_required_result_request_state",
            "Asks for a confirmation, with state of its own.",
        ),
        (
            "test_input_required_result_multiple_inputs",
            "Asks for a name, a greeting and the roots at once.",
        ),
        (
            "test_input_required_result_multi_round",
            "Asks twice, across three rounds.",
        ),
        (
            "test_input_required_result_tampered_state",
            "Asks for a confirmation with integrity-protected state.",
        ),
        (
            "test_input_required_result_capabilities",
            "Asks only for what the client declares it can give.",
        ),
    ] {
        tools.push(tool(name, description, no_args()));
    }
    tools.extend(crate::tasks::tools());
    tools.push(tool(
        "test_header_echo",
        "Echoes its region, which a client also sends as the Mcp-Param-Region header.",
        header_echo_schema(),
    ));
    tools
}

/// The prompts (both eras; the modern one adds an input-required prompt).
pub fn prompts(modern: bool) -> Value {
    let mut prompts = vec![
        json!({ "name": "test_simple_prompt", "description": "A simple prompt without arguments" }),
        json!({ "name": "test_prompt_with_arguments", "description": "A prompt with required arguments",
                "arguments": [
                    { "name": "arg1", "description": "First test argument", "required": true },
                    { "name": "arg2", "description": "Second test argument", "required": true } ] }),
        json!({ "name": "test_prompt_with_embedded_resource",
                "description": "A prompt that includes an embedded resource",
                "arguments": [{ "name": "resourceUri", "description": "The resource to embed", "required": true }] }),
        json!({ "name": "test_prompt_with_image", "description": "A prompt that includes image content" }),
    ];
    if modern {
        prompts.push(json!({ "name": "test_input_required_result_prompt",
                             "description": "MRTR: prompt that requires elicitation input" }));
    }
    json!({ "prompts": prompts })
}

/// A prompt's messages, or `None` for an unknown prompt.
pub fn prompt(name: &str, arguments: &Value) -> Option<Value> {
    let user = |content: Value| json!({ "role": "user", "content": content });
    let arg = |key: &str| arguments[key].as_str().unwrap_or("").to_string();
    Some(match name {
        "test_simple_prompt" => json!([user(text("This is a simple prompt for testing."))]),
        "test_prompt_with_arguments" => json!([user(text(&format!(
            "Prompt with arguments: arg1='{}', arg2='{}'",
            arg("arg1"),
            arg("arg2")
        )))]),
        "test_prompt_with_embedded_resource" => json!([
            user(json!({ "type": "resource", "resource": {
                "uri": arg("resourceUri"), "mimeType": "text/plain",
                "text": "Embedded resource content for testing." } })),
            user(text("Please process the embedded resource above.")),
        ]),
        "test_prompt_with_image" => json!([
            user(json!({ "type": "image", "data": IMG, "mimeType": "image/png" })),
            user(text("Please analyze the image above.")),
        ]),
        _ => return None,
    })
}

/// The resources.
pub fn resources() -> Value {
    json!({ "resources": [
        { "uri": "test://static-text", "name": "static-text", "title": "Static Text Resource",
          "description": "A static text resource for testing", "mimeType": "text/plain" },
        { "uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource",
          "description": "A static binary resource (image) for testing", "mimeType": "image/png" },
        { "uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource",
          "description": "A resource clients may subscribe to", "mimeType": "text/plain" },
    ]})
}

/// The resource templates.
pub fn templates() -> Value {
    json!({ "resourceTemplates": [
        { "uriTemplate": "test://template/{id}/data", "name": "template", "title": "Template Resource",
          "description": "A resource template with an id parameter", "mimeType": "application/json" },
    ]})
}

/// A resource's contents, or `None` for an unknown one.
pub fn read(uri: &str) -> Option<Value> {
    let contents = match uri {
        "test://static-text" => json!({ "uri": uri, "mimeType": "text/plain",
            "text": "This is the content of the static text resource." }),
        "test://static-binary" => json!({ "uri": uri, "mimeType": "image/png", "blob": IMG }),
        "test://watched-resource" => json!({ "uri": uri, "mimeType": "text/plain",
            "text": "Watched resource content" }),
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")?;
            let data =
                json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
            json!({ "uri": uri, "mimeType": "application/json", "text": data.to_string() })
        }
    };
    Some(json!({ "contents": [contents] }))
}

/// The answer to a call of one of the shared, synchronous tools, or `None`
/// for another tool.
pub fn simple_tool(name: &str, arguments: &Value) -> Option<Value> {
    Some(match name {
        "test_simple_text" => text_result("This is a simple text response for testing."),
        "test_image_content" => {
            json!({ "content": [{ "type": "image", "data": IMG, "mimeType": "image/png" }] })
        }
        "test_audio_content" => {
            json!({ "content": [{ "type": "audio", "data": WAV, "mimeType": "audio/wav" }] })
        }
        "test_embedded_resource" => json!({ "content": [{ "type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain",
            "text": "This is an embedded resource content." } }] }),
        "test_multiple_content_types" => json!({ "content": [
            text("Multiple content types test:"),
            { "type": "image", "data": IMG, "mimeType": "image/png" },
            { "type": "resource", "resource": { "uri": "test://mixed-content-resource",
              "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}" } },
        ]}),
        "test_error_handling" => json!({ "isError": true, "content": [
            text("This tool intentionally returns an error for testing")] }),
        "json_schema_2020_12_tool" => text_result(&format!(
            "JSON Schema 2020-12 tool called with: {arguments}"
        )),
        _ => return None,
    })
}
