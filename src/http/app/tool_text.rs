//! A `tools/call` result of one text block ([`ToolText`]), the commonest
//! result, written straight into the answer.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Value};

/// A `tools/call` result of one text block:
/// `{"content":[{"type":"text","text":…}],"isError":…}`. The answer is
/// written around its text in one buffer (the text escaped as it is
/// copied), with no serialization of its own and no `Value` tree: made by
/// [`Reply::tool_text`](super::Reply::tool_text) and
/// [`Reply::tool_error_text`](super::Reply::tool_error_text).
///
/// ```
/// use sessionreg::http::ToolText;
///
/// let text = ToolText::new("hi \"there\"");
/// assert_eq!(
///     serde_json::to_string(&text).unwrap(),
///     r#"{"content":[{"type":"text","text":"hi \"there\""}],"isError":false}"#
/// );
/// assert!(ToolText::error("no such basket").is_error());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolText {
    text: String,
    is_error: bool,
}

impl ToolText {
    /// The result of a call that succeeded, saying `text`.
    pub fn new(text: impl Into<String>) -> ToolText {
        ToolText {
            text: text.into(),
            is_error: false,
        }
    }

    /// The result of a call whose tool failed (`isError: true`), saying
    /// `text`: a failure the model should see, not a JSON-RPC error.
    pub fn error(text: impl Into<String>) -> ToolText {
        ToolText {
            text: text.into(),
            is_error: true,
        }
    }

    /// The block's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the tool failed (`isError`).
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The result's members, without the object's braces:
    /// `"content":[...],"isError":...`.
    pub(crate) fn write_members(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(br#""content":[{"type":"text","text":"#);
        serde_json::to_writer(&mut *out, self.text.as_str())?;
        out.extend_from_slice(match self.is_error {
            true => br#"}],"isError":true"#,
            false => br#"}],"isError":false"#,
        });
        Ok(())
    }

    /// The result as a tree, for the rare steps that edit a result.
    pub(crate) fn to_value(&self) -> Value {
        json!({ "content": [{ "type": "text", "text": self.text }], "isError": self.is_error })
    }
}

impl Serialize for ToolText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// The one text block.
        struct Block<'a>(&'a str);

        impl Serialize for Block<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut block = serializer.serialize_map(Some(2))?;
                block.serialize_entry("type", "text")?;
                block.serialize_entry("text", self.0)?;
                block.end()
            }
        }

        let mut result = serializer.serialize_map(Some(2))?;
        result.serialize_entry("content", &[Block(&self.text)])?;
        result.serialize_entry("isError", &self.is_error)?;
        result.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The members written into an answer are the object serde writes,
    /// braces aside, whatever the text needs escaped.
    #[test]
    fn its_members_are_its_serialized_object() {
        for text in ["", "hi", "a \"quoted\"\nline\t\u{1}", "é ☃ 😀", "\\"] {
            for tool in [ToolText::new(text), ToolText::error(text)] {
                let mut members = b"{".to_vec();
                tool.write_members(&mut members).unwrap();
                members.push(b'}');
                assert_eq!(
                    String::from_utf8(members).unwrap(),
                    serde_json::to_string(&tool).unwrap()
                );
                assert_eq!(serde_json::to_value(&tool).unwrap(), tool.to_value());
            }
        }
    }
}
