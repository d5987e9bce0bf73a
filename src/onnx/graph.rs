//! The model's graph as the runner holds it: values (with element types and shapes, which
//! may be symbolic) and nodes that read and write them by index rather than by name.

use std::collections::HashMap;
use std::path::Path;

use super::attr::{self, Attrs};
use super::constant::{self, Constant};
use super::elem::ElemType;
use super::proto::{self, GraphProto, NodeProto, ValueInfoProto};
use crate::base::error::{Error, Result};

/// The index of a value in [`Graph::values`].
pub type ValueId = usize;

/// One axis of a value's shape as the file declares it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A fixed extent.
    Fixed(usize),
    /// A named extent (`batch`, `sequence`), the same wherever the name appears.
    Symbol(String),
    /// An extent the file leaves open.
    Unknown,
}

/// As a message writes a declared extent: `7`, `batch`, or `?` for an open one.
impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Symbol(s) => f.write_str(s),
            Dim::Unknown => f.write_str("?"),
        }
    }
}

/// Where a value comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// A graph input, given to each run.
    Input,
    /// Data stored in the file (an initializer).
    Constant(Constant),
    /// Output `slot` of node `node`.
    Node {
        /// The index of the node in [`Graph::nodes`].
        node: usize,
        /// Which of its outputs.
        slot: usize,
    },
    /// A value of an enclosing graph, named in a subgraph (the body of `If` or `Loop`).
    Outer,
}

/// A value of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    /// Its name in the file.
    pub name: String,
    /// Its element type, where the file or shape inference says it.
    pub elem: Option<ElemType>,
    /// Its shape, where the file or shape inference says it.
    pub shape: Option<Vec<Dim>>,
    /// Whether the file declares it a sequence of tensors (`elem` and `shape` then describe
    /// each tensor).
    pub sequence: bool,
    /// Where it comes from.
    pub origin: Origin,
}

/// One operator application.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The node's name in the file (may be empty).
    pub name: String,
    /// The operator (`Conv`, `MatMul`, …).
    pub op: String,
    /// The operator's domain: empty for ONNX's default domain, or `com.microsoft`, ….
    pub domain: String,
    /// The values read, in order; `None` for an optional input left out.
    pub inputs: Vec<Option<ValueId>>,
    /// The values written, in order; `None` for an optional output not asked for.
    pub outputs: Vec<Option<ValueId>>,
    /// The attributes.
    pub attrs: Attrs,
}

impl Node {
    /// How errors name this node: `'name' (Op)`.
    pub fn label(&self) -> String {
        format!("node '{}' ({})", self.name, self.op)
    }
}

/// A graph: the model's main graph or the body of a control-flow node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    /// Every value: inputs, constants, node outputs and names of enclosing graphs.
    pub values: Vec<Value>,
    /// The nodes, in file order.
    pub nodes: Vec<Node>,
    /// The graph's inputs, in order (initializers excluded).
    pub inputs: Vec<ValueId>,
    /// The graph's outputs, in order.
    pub outputs: Vec<ValueId>,
}

impl Graph {
    /// The value called `name`, if the graph has one.
    pub fn find(&self, name: &str) -> Option<ValueId> {
        self.values.iter().position(|v| v.name == name)
    }

    /// The graph `g` holds. `dir` is where external data is looked for; `outer` are the names
    /// of the enclosing graphs' values, which a subgraph may read.
    pub fn from_proto(g: &GraphProto, dir: Option<&Path>, outer: &[String]) -> Result<Graph> {
        let mut b = Builder {
            graph: Graph::default(),
            ids: HashMap::new(),
            outer,
            dir,
        };
        b.constants(g)?;
        for info in &g.input {
            b.input(info)?;
        }
        for (i, node) in g.node.iter().enumerate() {
            b.outputs(i, node)
                .map_err(|e| attr::prefix(e, &node_label(node)))?;
        }
        for node in &g.node {
            b.node(node)
                .map_err(|e| attr::prefix(e, &node_label(node)))?;
        }
        for info in g.output.iter() {
            let name = info.name.as_deref().unwrap_or("");
            let id = b
                .read(name)
                .map_err(|e| attr::prefix(e, &format!("output '{name}'")))?;
            b.declare(id, info)?;
            b.graph.outputs.push(id);
        }
        for info in &g.value_info {
            if let Some(&id) = info.name.as_deref().and_then(|n| b.ids.get(n)) {
                b.declare(id, info)?;
            }
        }
        Ok(b.graph)
    }
}

/// How errors name a node of the file.
fn node_label(node: &NodeProto) -> String {
    let name = node.name.as_deref().unwrap_or("");
    format!("node '{name}' ({})", node.op_type.as_deref().unwrap_or("?"))
}

/// Builds a [`Graph`], resolving names to ids.
struct Builder<'a> {
    graph: Graph,
    ids: HashMap<String, ValueId>,
    outer: &'a [String],
    dir: Option<&'a Path>,
}

impl Builder<'_> {
    /// A new value called `name`; a name defined twice is an error.
    fn define(&mut self, name: &str, origin: Origin) -> Result<ValueId> {
        if self.ids.contains_key(name) {
            return Err(Error::Model(format!("the value '{name}' is defined twice")));
        }
        let id = self.graph.values.len();
        let value = Value {
            name: name.to_string(),
            elem: None,
            shape: None,
            sequence: false,
            origin,
        };
        self.graph.values.push(value);
        self.ids.insert(name.to_string(), id);
        Ok(id)
    }

    /// The initializers, as constants with their types and shapes.
    fn constants(&mut self, g: &GraphProto) -> Result<()> {
        if !g.sparse_initializer.is_empty() {
            return Err(Error::Model("sparse initializers are not supported".into()));
        }
        for t in &g.initializer {
            let c = constant::from_proto(t, self.dir)?;
            let (elem, dims) = (c.elem, c.dims.iter().map(|&d| Dim::Fixed(d)).collect());
            let id = self.define(t.name.as_deref().unwrap_or(""), Origin::Constant(c))?;
            self.graph.values[id].elem = Some(elem);
            self.graph.values[id].shape = Some(dims);
        }
        Ok(())
    }

    /// A graph input; one that names an initializer (as IR versions before 4 list weights)
    /// stays a constant.
    fn input(&mut self, info: &ValueInfoProto) -> Result<()> {
        let name = info.name.as_deref().unwrap_or("");
        if self.ids.contains_key(name) {
            return Ok(());
        }
        let id = self.define(name, Origin::Input)?;
        self.declare(id, info)?;
        self.graph.inputs.push(id);
        Ok(())
    }

    /// The value a node or output reads: defined before, or a name of an enclosing graph.
    fn read(&mut self, name: &str) -> Result<ValueId> {
        if let Some(&id) = self.ids.get(name) {
            return Ok(id);
        }
        if self.outer.iter().any(|n| n == name) {
            return self.define(name, Origin::Outer);
        }
        Err(Error::Model(format!(
            "reads '{name}', which no input, initializer or earlier node defines"
        )))
    }

    /// Defines the outputs of node `index`, so that nodes may read them in any file order.
    fn outputs(&mut self, index: usize, n: &NodeProto) -> Result<()> {
        for (slot, name) in n.output.iter().enumerate() {
            if !name.is_empty() {
                self.define(name, Origin::Node { node: index, slot })?;
            }
        }
        Ok(())
    }

    /// A node of the file, its outputs defined before.
    fn node(&mut self, n: &NodeProto) -> Result<()> {
        let inputs = n
            .input
            .iter()
            .map(|name| {
                if name.is_empty() {
                    Ok(None)
                } else {
                    self.read(name).map(Some)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let attrs = self.attrs(n)?;
        let outputs = n
            .output
            .iter()
            .map(|name| (!name.is_empty()).then(|| self.ids[name.as_str()]))
            .collect();
        self.graph.nodes.push(Node {
            name: n.name.clone().unwrap_or_default(),
            op: n.op_type.clone().unwrap_or_default(),
            domain: n.domain.clone().unwrap_or_default(),
            inputs,
            outputs,
            attrs,
        });
        Ok(())
    }

    /// A node's attributes; a subgraph among them may read every value in scope here.
    fn attrs(&self, n: &NodeProto) -> Result<Attrs> {
        let dir = self.dir;
        let mut scope = Vec::new();
        if n.attribute
            .iter()
            .any(|a| a.g.is_some() || !a.graphs.is_empty())
        {
            scope = self.outer.to_vec();
            scope.extend(self.ids.keys().cloned());
        }
        attr::from_proto(&n.attribute, dir, &mut |g| {
            Graph::from_proto(g, dir, &scope)
        })
    }

    /// Records the type and shape `info` declares for value `id`: a tensor's, or those of
    /// the tensors of a sequence.
    fn declare(&mut self, id: ValueId, info: &ValueInfoProto) -> Result<()> {
        use proto::type_proto::Value as Type;
        let (t, sequence) = match info.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(Type::TensorType(t)) => (t, false),
            Some(Type::SequenceType(s)) => {
                match s.elem_type.as_ref().and_then(|t| t.value.as_ref()) {
                    Some(Type::TensorType(t)) => (t, true),
                    _ => return Ok(()),
                }
            }
            _ => return Ok(()),
        };
        let value = &mut self.graph.values[id];
        value.sequence = sequence;
        if let Some(code) = t.elem_type.filter(|&c| c != 0) {
            value.elem = Some(
                ElemType::from_code(code)
                    .map_err(|e| attr::prefix(e, &format!("value '{}'", value.name)))?,
            );
        }
        if let Some(shape) = &t.shape {
            value.shape = Some(shape.dim.iter().map(dim).collect());
        }
        Ok(())
    }
}

/// One declared axis.
fn dim(d: &proto::tensor_shape_proto::Dimension) -> Dim {
    use proto::tensor_shape_proto::dimension::Value;
    match &d.value {
        Some(Value::DimValue(v)) if *v >= 0 => Dim::Fixed(*v as usize),
        Some(Value::DimParam(p)) if !p.is_empty() => Dim::Symbol(p.clone()),
        _ => Dim::Unknown,
    }
}
