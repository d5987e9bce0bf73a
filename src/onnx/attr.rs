//! A node's attributes, read by name with their ONNX types checked.

use super::constant::{self, Constant};
use super::graph::Graph;
use super::proto::{AttributeProto, GraphProto};
use crate::base::error::{Error, Result};
use std::path::Path;

/// One attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// FLOAT.
    Float(f32),
    /// INT.
    Int(i64),
    /// STRING (UTF-8 as ONNX's string attributes are).
    String(String),
    /// TENSOR.
    Tensor(Constant),
    /// GRAPH: the body of `If`, `Loop` or `Scan`.
    Graph(Box<Graph>),
    /// FLOATS.
    Floats(Vec<f32>),
    /// INTS.
    Ints(Vec<i64>),
    /// STRINGS.
    Strings(Vec<String>),
}

impl Attr {
    /// ONNX's name of the attribute type.
    fn kind(&self) -> &'static str {
        match self {
            Attr::Float(_) => "FLOAT",
            Attr::Int(_) => "INT",
            Attr::String(_) => "STRING",
            Attr::Tensor(_) => "TENSOR",
            Attr::Graph(_) => "GRAPH",
            Attr::Floats(_) => "FLOATS",
            Attr::Ints(_) => "INTS",
            Attr::Strings(_) => "STRINGS",
        }
    }
}

/// The attributes of one node, by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attrs {
    entries: Vec<(String, Attr)>,
}

/// An attribute getter: the value if `name` is there and of the expected kind.
macro_rules! getter {
    ($(#[$doc:meta])* $fn:ident, $variant:ident, $ty:ty, $kind:literal) => {
        $(#[$doc])*
        pub fn $fn(&self, name: &str) -> Result<Option<$ty>> {
            match self.get(name) {
                None => Ok(None),
                Some(Attr::$variant(v)) => Ok(Some(v)),
                Some(other) => Err(wrong(name, other, $kind)),
            }
        }
    };
}

impl Attrs {
    /// The attribute called `name`, if the node has it.
    pub fn get(&self, name: &str) -> Option<&Attr> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }

    /// These attributes with `name` set to `value` (replaced where it was there).
    pub fn with(mut self, name: &str, value: Attr) -> Attrs {
        self.entries.retain(|(n, _)| n != name);
        self.entries.push((name.to_string(), value));
        self
    }

    /// The attributes by name, in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Attr)> {
        self.entries.iter().map(|(n, a)| (n.as_str(), a))
    }

    /// The GRAPH attributes' bodies, to rewrite in place.
    pub(crate) fn graphs_mut(&mut self) -> impl Iterator<Item = &mut Graph> {
        self.entries.iter_mut().filter_map(|(_, a)| match a {
            Attr::Graph(g) => Some(&mut **g),
            _ => None,
        })
    }

    getter!(
        /// An INT attribute.
        int, Int, &i64, "INT"
    );
    getter!(
        /// A FLOAT attribute.
        float, Float, &f32, "FLOAT"
    );
    getter!(
        /// A STRING attribute.
        string, String, &String, "STRING"
    );
    getter!(
        /// An INTS attribute.
        ints, Ints, &Vec<i64>, "INTS"
    );
    getter!(
        /// A FLOATS attribute.
        floats, Floats, &Vec<f32>, "FLOATS"
    );
    getter!(
        /// A STRINGS attribute.
        strings, Strings, &Vec<String>, "STRINGS"
    );
    getter!(
        /// A TENSOR attribute.
        tensor, Tensor, &Constant, "TENSOR"
    );
    getter!(
        /// A GRAPH attribute.
        graph, Graph, &Box<Graph>, "GRAPH"
    );
}

/// The error for attribute `name` holding `got` where `expected` was.
fn wrong(name: &str, got: &Attr, expected: &str) -> Error {
    Error::Model(format!(
        "attribute '{name}' is {}; expected {expected}",
        got.kind()
    ))
}

/// The attributes of a node. `subgraph` builds a GRAPH attribute's body, which may name the
/// values of the graphs around it.
pub fn from_proto(
    list: &[AttributeProto],
    dir: Option<&Path>,
    subgraph: &mut dyn FnMut(&GraphProto) -> Result<Graph>,
) -> Result<Attrs> {
    let mut entries = Vec::with_capacity(list.len());
    for a in list {
        let name = a.name.clone().unwrap_or_default();
        let value = one(a, dir, subgraph).map_err(|e| prefix(e, &format!("attribute '{name}'")))?;
        entries.push((name, value));
    }
    Ok(Attrs { entries })
}

/// `e` with `what` in front of a model error's message.
pub fn prefix(e: Error, what: &str) -> Error {
    match e {
        Error::Model(m) => Error::Model(format!("{what}: {m}")),
        other => other,
    }
}

/// One attribute's value, by its `type` field.
fn one(
    a: &AttributeProto,
    dir: Option<&Path>,
    subgraph: &mut dyn FnMut(&GraphProto) -> Result<Graph>,
) -> Result<Attr> {
    if a.ref_attr_name.is_some() {
        return Err(Error::Model(
            "refers to a function's attribute outside a function".into(),
        ));
    }
    let text = |s: &prost::bytes::Bytes| String::from_utf8_lossy(s).into_owned();
    Ok(match a.r#type.unwrap_or(0) {
        1 => Attr::Float(a.f.unwrap_or(0.0)),
        2 => Attr::Int(a.i.unwrap_or(0)),
        3 => Attr::String(a.s.as_ref().map(text).unwrap_or_default()),
        4 => Attr::Tensor(constant::from_proto(
            a.t.as_ref().ok_or_else(missing)?,
            dir,
        )?),
        5 => Attr::Graph(Box::new(subgraph(a.g.as_ref().ok_or_else(missing)?)?)),
        6 => Attr::Floats(a.floats.clone()),
        7 => Attr::Ints(a.ints.clone()),
        8 => Attr::Strings(a.strings.iter().map(text).collect()),
        t => {
            return Err(Error::Model(format!(
                "has type {t} (sparse tensors, lists of tensors or graphs, or type protos); \
                 expected FLOAT, INT, STRING, TENSOR, GRAPH, FLOATS, INTS or STRINGS"
            )))
        }
    })
}

/// The error for a TENSOR or GRAPH attribute without its value.
fn missing() -> Error {
    Error::Model("has no value".into())
}
