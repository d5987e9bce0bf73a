//! A parsed `.onnx` file: its main graph and the operator set versions it was written for.

use std::path::Path;

use prost::bytes::Bytes;
use prost::Message;

use super::graph::Graph;
use super::proto::ModelProto;
use crate::base::error::{Error, Result};

/// The default domain's operator set versions the runner knows the semantics of (opset 6's
/// differences from 7 are honoured or refused at load).
pub const OPSETS: std::ops::RangeInclusive<i64> = 6..=21;

/// A parsed model.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// The main graph.
    pub graph: Graph,
    /// The operator set version of each domain the model imports (`""` is ONNX's default).
    pub opsets: Vec<(String, i64)>,
    /// The file format's IR version.
    pub ir_version: i64,
    /// The tool that wrote the file (`pytorch`, `tf2onnx`, …) and its version.
    pub producer: String,
}

impl Model {
    /// The model in `bytes` (a whole `.onnx` file). Initializers stay views of `bytes`; data
    /// kept in external files cannot be found this way (use [`Model::from_path`]).
    pub fn from_bytes(bytes: impl Into<Bytes>) -> Result<Model> {
        Self::parse(bytes.into(), None)
    }

    /// The model in the file at `path`, with external data files looked for beside it.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_path(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let bytes = std::fs::read(path)
            .map_err(|e| Error::Model(format!("cannot read {}: {e}", path.display())))?;
        Self::parse(bytes.into(), Some(path.parent().unwrap_or(Path::new("."))))
    }

    /// The version of `domain`'s operator set (`""` and `"ai.onnx"` both name the default).
    pub fn opset(&self, domain: &str) -> Option<i64> {
        let default = |d: &str| d.is_empty() || d == "ai.onnx";
        self.opsets
            .iter()
            .find(|(d, _)| d == domain || (default(d) && default(domain)))
            .map(|&(_, v)| v)
    }

    /// Parses and checks `bytes`; `dir` is where external data files are.
    fn parse(bytes: Bytes, dir: Option<&Path>) -> Result<Model> {
        let proto = ModelProto::decode(bytes).map_err(|e| {
            Error::Model(format!("not an ONNX model (a ModelProto in protobuf): {e}"))
        })?;
        let graph = proto
            .graph
            .as_ref()
            .ok_or_else(|| Error::Model("the model has no graph".into()))?;
        if !proto.functions.is_empty() {
            return Err(Error::Model(format!(
                "the model defines {} local functions; they are not supported yet",
                proto.functions.len()
            )));
        }
        let model = Model {
            graph: Graph::from_proto(graph, dir, &[])?,
            opsets: proto
                .opset_import
                .iter()
                .map(|o| (o.domain.clone().unwrap_or_default(), o.version.unwrap_or(1)))
                .collect(),
            ir_version: proto.ir_version.unwrap_or(0),
            producer: format!(
                "{} {}",
                proto.producer_name.unwrap_or_default(),
                proto.producer_version.unwrap_or_default()
            )
            .trim()
            .to_string(),
        };
        model.check_opsets()?;
        Ok(model)
    }

    /// Refuses a model without a default-domain opset in [`OPSETS`] when it uses the domain.
    fn check_opsets(&self) -> Result<()> {
        let uses_default = self.graph.nodes.iter().any(|n| self.is_default(&n.domain));
        match self.opset("") {
            _ if !uses_default => Ok(()),
            Some(v) if v >= *OPSETS.start() => Ok(()),
            v => Err(Error::Model(format!(
                "the model imports ONNX opset {}; supported: {} to {} (and later ones, with \
                 the semantics of {})",
                v.map_or("none".to_string(), |v| v.to_string()),
                OPSETS.start(),
                OPSETS.end(),
                OPSETS.end()
            ))),
        }
    }

    /// Whether `domain` is ONNX's default one.
    fn is_default(&self, domain: &str) -> bool {
        domain.is_empty() || domain == "ai.onnx"
    }
}
