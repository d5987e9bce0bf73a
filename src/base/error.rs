//! The one error type of the library: every failure names what was wrong and what was expected.

use crate::base::info::BackendKind;

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when using unicompute.
///
/// Every variant carries enough text to tell the user what was wrong and what was expected;
/// [`Error::code`] gives a stable machine-readable name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// No device of the requested kind exists or could be opened.
    #[error("no device: {0}")]
    NoDevice(String),
    /// The backend exists in the API but this build or device cannot run the request.
    #[error("unsupported on {backend}: {what}")]
    Unsupported {
        /// Backend that refused.
        backend: BackendKind,
        /// What was asked for, and what would work instead.
        what: String,
    },
    /// Shapes of operands do not fit together.
    #[error("shape mismatch in {op}: {detail}")]
    Shape {
        /// Operation that checked the shapes.
        op: &'static str,
        /// Shapes that were given and what was expected.
        detail: String,
    },
    /// Element type is not the one expected.
    #[error("dtype mismatch in {op}: expected {expected}, got {got}")]
    DType {
        /// Operation that checked the dtype.
        op: &'static str,
        /// Expected dtype(s).
        expected: String,
        /// Dtype that was given.
        got: String,
    },
    /// An index, range or axis lies outside what the object holds.
    #[error("out of range: {0}")]
    OutOfRange(String),
    /// A request exceeds a device limit.
    #[error("{what} is {value}, but the device limit {limit} is {max}")]
    Limit {
        /// What was too large.
        what: String,
        /// Requested value.
        value: u64,
        /// Name of the device limit.
        limit: &'static str,
        /// The device's maximum.
        max: u64,
    },
    /// A WGSL (or other) kernel source failed to parse or validate.
    #[error("shader error at {line}:{column}: {message}\n  {line} | {source_line}")]
    Shader {
        /// 1-based line of the error.
        line: u32,
        /// 1-based column of the error.
        column: u32,
        /// What the compiler said.
        message: String,
        /// The offending source line.
        source_line: String,
    },
    /// A kernel launch does not match the kernel's reflected bindings or workgroup limits.
    #[error("kernel launch: {0}")]
    Launch(String),
    /// Objects from different devices were mixed.
    #[error("device mismatch: {0}")]
    DeviceMismatch(String),
    /// The device reported an error (out of memory, say); the call failed, the device stays
    /// usable.
    #[error("device error: {0}")]
    Device(String),
    /// An ONNX model is malformed, or uses what the model runner does not support.
    #[error("model: {0}")]
    Model(String),
    /// The device is gone (destroyed, reset, unplugged, or a CUDA context error): every later
    /// call on it fails this way; open a device again (`Device::open(Auto)`) to continue.
    #[error("device lost: {0}")]
    DeviceLost(String),
    /// An invalid argument that fits none of the categories above.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A bug in unicompute: a state its own code should never reach (a lost loop in the CPU
    /// WGSL executor, an op kernel that does not compile). Nothing the caller passed was
    /// wrong; please report it with the message.
    #[error("internal error (a unicompute bug, please report it): {0}")]
    Internal(String),
}

impl Error {
    /// Stable machine-readable name of the error kind (used as `code` in JavaScript).
    pub fn code(&self) -> &'static str {
        match self {
            Error::NoDevice(_) => "NO_DEVICE",
            Error::Unsupported { .. } => "UNSUPPORTED",
            Error::Shape { .. } => "SHAPE",
            Error::DType { .. } => "DTYPE",
            Error::OutOfRange(_) => "OUT_OF_RANGE",
            Error::Limit { .. } => "LIMIT",
            Error::Shader { .. } => "SHADER",
            Error::Launch(_) => "LAUNCH",
            Error::DeviceMismatch(_) => "DEVICE_MISMATCH",
            Error::Device(_) => "DEVICE",
            Error::DeviceLost(_) => "DEVICE_LOST",
            Error::Invalid(_) => "INVALID",
            Error::Model(_) => "MODEL",
            Error::Internal(_) => "INTERNAL",
        }
    }

    pub(crate) fn shape(op: &'static str, detail: impl Into<String>) -> Self {
        Error::Shape {
            op,
            detail: detail.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of every kind.
    fn one_of_each() -> Vec<Error> {
        let text = || String::from("x");
        vec![
            Error::NoDevice(text()),
            Error::Unsupported {
                backend: BackendKind::Cpu,
                what: text(),
            },
            Error::shape("op", text()),
            Error::DType {
                op: "op",
                expected: text(),
                got: text(),
            },
            Error::OutOfRange(text()),
            Error::Limit {
                what: text(),
                value: 2,
                limit: "max",
                max: 1,
            },
            Error::Shader {
                line: 1,
                column: 1,
                message: text(),
                source_line: text(),
            },
            Error::Launch(text()),
            Error::DeviceMismatch(text()),
            Error::Device(text()),
            Error::DeviceLost(text()),
            Error::Invalid(text()),
            Error::Internal(text()),
            Error::Model(text()),
        ]
    }

    /// Library bugs have a code of their own, and their message asks for a report.
    #[test]
    fn internal_errors_are_not_device_errors() {
        let e = Error::Internal("lost a loop".into());
        assert_eq!(e.code(), "INTERNAL");
        assert_eq!(
            e.to_string(),
            "internal error (a unicompute bug, please report it): lost a loop"
        );
    }

    /// Every code is distinct and is in the TypeScript `ErrorCode` union that JS callers
    /// match on (src/wasm/types.rs, re-exported by the npm package's typings).
    #[test]
    fn every_code_is_distinct_and_typed_for_js() {
        let types = include_str!("../wasm/types.rs");
        let union = types
            .lines()
            .find(|l| l.starts_with("export type ErrorCode ="))
            .expect("src/wasm/types.rs declares ErrorCode");
        let codes: Vec<&str> = one_of_each().iter().map(Error::code).collect();
        for (i, code) in codes.iter().enumerate() {
            assert!(!codes[..i].contains(code), "{code} is used twice");
            assert!(
                union.contains(&format!("'{code}'")),
                "{code} is missing from {union}"
            );
        }
        assert_eq!(union.matches('\'').count(), 2 * codes.len(), "{union}");
    }
}
