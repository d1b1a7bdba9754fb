//! The estimator: the cost of one rule run once, over its parsed CEL expression, with the sizes of what `self`
//! reaches taken from the schema (`Sizes::of_schema`) or from an object (`Sizes::observed`).
//!
//! Every value an expression computes has a `Shape`: a schema node, or a list, string or value of unknown type
//! with a bound on its size. A comprehension costs the size of its range times its condition and step; a
//! size-dependent function costs a tenth of a unit per element or byte it may touch. Unknown functions are taken
//! as linear in everything they are given, so the estimate stays an upper bound.

use kube_core::cel::cel::common::ast::{ComprehensionExpr, Expr, IdedExpr, LiteralValue};

use super::observe::Seen;
use super::{CostModel, Kind, MAX_DEPTH, MAX_REQUEST_BYTES};

/// How deep an expression is followed; deeper costs the maximum (no real rule nests so far).
const MAX_EXPRESSION_DEPTH: usize = 300;

/// The sizes of schema nodes: from the schema's bounds (`Sizes::of_schema`) or the largest value an object holds
/// at each node (`Sizes::observed`), with each node's whole content worked out once.
pub(crate) struct Sizes {
    size: Vec<u64>,
    /// The longest key of a map node.
    key: Vec<u64>,
    /// Everything in a value of the node: elements, entries and bytes, all the way down.
    deep: Vec<u64>,
}

impl Sizes {
    pub(crate) fn of_schema(model: &CostModel) -> Sizes {
        let size = model.nodes.iter().map(|n| n.max_size).collect();
        Sizes::with(model, size, vec![MAX_REQUEST_BYTES - 2; model.nodes.len()])
    }

    pub(crate) fn observed(model: &CostModel, seen: &[Seen]) -> Sizes {
        Sizes::with(model, seen.iter().map(|s| s.size).collect(), seen.iter().map(|s| s.key).collect())
    }

    fn with(model: &CostModel, size: Vec<u64>, key: Vec<u64>) -> Sizes {
        // Children come after their parent: from the end, a node's children are done before it.
        let mut deep = vec![0u64; model.nodes.len()];
        for index in (0..model.nodes.len()).rev() {
            let node = &model.nodes[index];
            deep[index] = match node.kind {
                Kind::Scalar => 1,
                Kind::String | Kind::Any => size[index],
                Kind::List | Kind::Map => size[index].saturating_mul(node.items.map_or(1, |c| deep[c]).saturating_add(1)),
                Kind::Object => node.properties.values().chain(&node.unknown).fold(1u64, |sum, c| sum.saturating_add(deep[*c])),
            };
        }
        Sizes { size, key, deep }
    }
}

/// What an expression's value is, as far as its size goes.
#[derive(Clone, Debug, PartialEq)]
enum Shape {
    /// A value of a schema node.
    Node(usize),
    /// A list of at most `.0` elements, each of shape `.1`.
    List(u64, Box<Shape>),
    /// A string of at most `.0` bytes.
    Str(u64),
    /// A value of unknown type of which every part is at most `.0` in size.
    Sized(u64),
}

const SCALAR: Shape = Shape::Sized(1);

/// A tenth of a unit per element or byte, rounded up (cel-go's traversal cost factor).
fn tenth(n: u64) -> u64 {
    n.div_ceil(10)
}

struct Estimator<'a> {
    model: &'a CostModel,
    sizes: &'a Sizes,
    /// Variables in scope, innermost last.
    scope: Vec<(String, Shape)>,
}

/// The cost of `expression` run once with `self` (and `oldSelf`) a value of `node`.
pub(crate) fn rule(model: &CostModel, sizes: &Sizes, node: usize, expression: &IdedExpr) -> u64 {
    let mut estimator = Estimator { model, sizes, scope: vec![("self".into(), Shape::Node(node)), ("oldSelf".into(), Shape::Node(node))] };
    estimator.cost(expression, 0).0
}

impl Estimator<'_> {
    fn size(&self, shape: &Shape) -> u64 {
        match shape {
            Shape::Node(n) => self.sizes.size[*n],
            Shape::List(size, _) | Shape::Str(size) | Shape::Sized(size) => *size,
        }
    }

    /// What iterating `shape` binds the variable to: list elements, map keys.
    fn element(&self, shape: &Shape) -> Shape {
        match shape {
            Shape::Node(n) => {
                let node = &self.model.nodes[*n];
                match node.kind {
                    Kind::List => node.items.map_or(SCALAR, Shape::Node),
                    Kind::Map => Shape::Str(self.sizes.key[*n]),
                    Kind::Object => Shape::Str(node.properties.keys().map(|k| k.len() as u64).max().unwrap_or(0)),
                    Kind::Any => Shape::Node(*n),
                    Kind::String | Kind::Scalar => SCALAR,
                }
            }
            Shape::List(_, element) => (**element).clone(),
            Shape::Str(_) => SCALAR,
            Shape::Sized(n) => Shape::Sized(*n),
        }
    }

    /// What `shape[i]` is: a list element, a map value.
    fn value(&self, shape: &Shape) -> Shape {
        match shape {
            Shape::Node(n) => {
                let node = &self.model.nodes[*n];
                match node.kind {
                    Kind::List | Kind::Map => node.items.map_or(SCALAR, Shape::Node),
                    Kind::Any => Shape::Node(*n),
                    Kind::Object => Shape::Sized(self.deep(shape, 0)),
                    Kind::String | Kind::Scalar => SCALAR,
                }
            }
            Shape::List(_, element) => (**element).clone(),
            other => Shape::Sized(self.deep(other, 0)),
        }
    }

    /// What `shape.name` is.
    fn field(&self, shape: &Shape, name: &str) -> Shape {
        match shape {
            Shape::Node(n) => {
                let node = &self.model.nodes[*n];
                match node.kind {
                    Kind::Object => node.properties.get(name).or(node.unknown.as_ref()).map_or(SCALAR, |c| Shape::Node(*c)),
                    Kind::Map => node.items.map_or(SCALAR, Shape::Node),
                    Kind::Any => Shape::Node(*n),
                    _ => SCALAR,
                }
            }
            Shape::Sized(n) => Shape::Sized(*n),
            _ => SCALAR,
        }
    }

    /// Everything in a value: elements, entries and bytes, all the way down.
    fn deep(&self, shape: &Shape, depth: usize) -> u64 {
        if depth > MAX_DEPTH {
            return MAX_REQUEST_BYTES;
        }
        match shape {
            Shape::Node(n) => self.sizes.deep[*n],
            Shape::List(size, element) => size.saturating_mul(self.deep(element, depth + 1).saturating_add(1)),
            Shape::Str(size) | Shape::Sized(size) => *size,
        }
    }

    fn is_list(&self, shape: &Shape) -> bool {
        match shape {
            Shape::Node(n) => self.model.nodes[*n].kind == Kind::List,
            Shape::List(..) => true,
            _ => false,
        }
    }

    fn is_string(&self, shape: &Shape) -> bool {
        match shape {
            Shape::Node(n) => self.model.nodes[*n].kind == Kind::String,
            Shape::Str(_) => true,
            _ => false,
        }
    }

    fn merge(&self, a: Shape, b: Shape) -> Shape {
        if a == b {
            a
        } else {
            Shape::Sized(self.deep(&a, 0).max(self.deep(&b, 0)))
        }
    }

    fn lookup(&self, name: &str) -> Shape {
        self.scope.iter().rev().find(|(n, _)| n == name).map_or(SCALAR, |(_, s)| s.clone())
    }

    /// The cost of `expression` and the shape of its value.
    fn cost(&mut self, expression: &IdedExpr, depth: usize) -> (u64, Shape) {
        if depth > MAX_EXPRESSION_DEPTH {
            return (u64::MAX, Shape::Sized(MAX_REQUEST_BYTES));
        }
        match &expression.expr {
            Expr::Unspecified => (0, SCALAR),
            Expr::Literal(LiteralValue::String(s)) => (0, Shape::Str(s.inner().len() as u64)),
            Expr::Literal(_) => (0, SCALAR),
            Expr::Ident(name) => (1, self.lookup(name)),
            Expr::Select(select) => {
                let (cost, operand) = self.cost(&select.operand, depth + 1);
                let shape = if select.test { SCALAR } else { self.field(&operand, &select.field) };
                (cost.saturating_add(1), shape)
            }
            Expr::List(list) => {
                let mut cost = 10u64;
                let mut element: Option<Shape> = None;
                for item in &list.elements {
                    let (c, s) = self.cost(item, depth + 1);
                    cost = cost.saturating_add(c);
                    element = Some(match element {
                        None => s,
                        Some(e) => self.merge(e, s),
                    });
                }
                (cost, Shape::List(list.elements.len() as u64, Box::new(element.unwrap_or(SCALAR))))
            }
            Expr::Map(map) => self.entries(map.entries.len(), 30, map.entries.iter().map(|e| &e.expr), depth),
            Expr::Struct(s) => self.entries(s.entries.len(), 40, s.entries.iter().map(|e| &e.expr), depth),
            Expr::Call(call) => {
                // Logical operators cost only their operands (as cel-go counts them).
                let logical = matches!(call.func_name.as_str(), "_&&_" | "_||_" | "!_" | "_?_:_" | "@not_strictly_false");
                let mut cost = u64::from(!logical);
                let mut operands = Vec::new();
                for operand in call.target.as_deref().into_iter().chain(&call.args) {
                    let (c, s) = self.cost(operand, depth + 1);
                    cost = cost.saturating_add(c);
                    operands.push(s);
                }
                let (extra, shape) = self.call(&call.func_name, call.target.is_some(), &operands);
                (cost.saturating_add(extra), shape)
            }
            Expr::Comprehension(comprehension) => self.comprehension(comprehension, depth),
        }
    }

    fn entries<'e>(&mut self, count: usize, base: u64, entries: impl Iterator<Item = &'e kube_core::cel::cel::common::ast::EntryExpr>, depth: usize) -> (u64, Shape) {
        use kube_core::cel::cel::common::ast::EntryExpr;
        let mut cost = base;
        let mut content = count as u64;
        for entry in entries {
            let parts: Vec<&IdedExpr> = match entry {
                EntryExpr::MapEntry(e) => vec![&e.key, &e.value],
                EntryExpr::StructField(f) => vec![&f.value],
            };
            for part in parts {
                let (c, s) = self.cost(part, depth + 1);
                cost = cost.saturating_add(c);
                content = content.saturating_add(self.deep(&s, 0));
            }
        }
        (cost, Shape::Sized(content.max(1)))
    }

    /// What a function adds to the cost of its operands, and the shape of its result.
    fn call(&self, name: &str, method: bool, operands: &[Shape]) -> (u64, Shape) {
        let deep = |i: usize| operands.get(i).map_or(0, |s| self.deep(s, 0));
        let size = |i: usize| operands.get(i).map_or(0, |s| self.size(s));
        let all: u64 = (0..operands.len()).fold(0u64, |sum, i| sum.saturating_add(deep(i)));
        match name {
            "_&&_" | "_||_" | "!_" | "@not_strictly_false" | "-_" | "_-_" | "_*_" | "_/_" | "_%_" | "size" => (0, SCALAR),
            "_?_:_" => (0, match (operands.get(1), operands.get(2)) {
                (Some(a), Some(b)) => self.merge(a.clone(), b.clone()),
                _ => SCALAR,
            }),
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => (tenth(deep(0).min(deep(1))), SCALAR),
            "_[_]" | "_[?_]" => (0, operands.first().map_or(SCALAR, |s| self.value(s))),
            "@in" => match operands.get(1) {
                Some(list) if self.is_list(list) || matches!(list, Shape::Sized(_)) => {
                    (size(1).saturating_mul(tenth(deep(0)).saturating_add(1)), SCALAR)
                }
                _ => (tenth(deep(0)), SCALAR),
            },
            "_+_" => self.add(operands),
            // A regular expression is compiled at every call: its pattern weighs ten units a byte.
            "matches" | "find" => (tenth(all).saturating_add(size(1).saturating_mul(10)), if name == "find" { Shape::Str(size(0)) } else { SCALAR }),
            "findAll" => (tenth(all).saturating_add(size(1).saturating_mul(10)), Shape::List(size(0), Box::new(Shape::Str(size(0))))),
            "contains" | "startsWith" | "endsWith" | "indexOf" | "lastIndexOf" | "isSorted" | "sum" | "min" | "max" => (tenth(all), SCALAR),
            "split" => (tenth(all), Shape::List(size(0).saturating_add(1), Box::new(Shape::Str(size(0))))),
            "lowerAscii" | "upperAscii" | "trim" | "substring" | "charAt" | "quote" | "join" | "string" | "format" => {
                (tenth(all), Shape::Str(all))
            }
            "replace" => {
                let grown = size(0).saturating_mul(size(2).max(1)).saturating_add(size(0));
                (tenth(all.saturating_add(grown)), Shape::Str(grown))
            }
            "reverse" | "sort" | "slice" if method && operands.first().is_some_and(|s| self.is_list(s)) => {
                let n = size(0);
                let log = u64::from(64 - n.leading_zeros()).max(1);
                (tenth(deep(0).saturating_mul(log)), operands[0].clone())
            }
            "reverse" if method => (tenth(all), Shape::Str(size(0))),
            "distinct" => (tenth(size(0).saturating_mul(deep(0))), operands.first().cloned().unwrap_or(SCALAR)),
            "sets.contains" | "sets.equivalent" | "sets.intersects" => (tenth(deep(0).saturating_mul(deep(1))), SCALAR),
            "dyn" => (0, operands.first().cloned().unwrap_or(SCALAR)),
            "int" | "uint" | "double" | "bool" | "type" | "duration" | "timestamp" => (tenth(all), SCALAR),
            _ => (tenth(all), Shape::Sized((0..operands.len()).map(deep).max().unwrap_or(1).max(1))),
        }
    }

    /// `a + b`: numbers, strings or lists. Appending copies the left list's elements (not their content).
    fn add(&self, operands: &[Shape]) -> (u64, Shape) {
        let (Some(a), Some(b)) = (operands.first(), operands.get(1)) else { return (0, SCALAR) };
        if self.is_string(a) || self.is_string(b) {
            let length = self.size(a).saturating_add(self.size(b));
            return (tenth(length), Shape::Str(length));
        }
        if self.is_list(a) || self.is_list(b) {
            let length = self.size(a).saturating_add(self.size(b));
            let element = self.merge(self.element(a), self.element(b));
            return (tenth(length), Shape::List(length, Box::new(element)));
        }
        match (a, b) {
            (Shape::Sized(x), Shape::Sized(y)) => (tenth(x.saturating_add(*y)), Shape::Sized(x.saturating_add(*y))),
            _ => (0, SCALAR),
        }
    }

    /// A macro's loop: the range once, then its condition and step once per element.
    fn comprehension(&mut self, c: &ComprehensionExpr, depth: usize) -> (u64, Shape) {
        let (range_cost, range) = self.cost(&c.iter_range, depth + 1);
        let (init_cost, init) = self.cost(&c.accu_init, depth + 1);
        let count = self.size(&range);
        let (first, second) = match (&c.iter_var2, self.is_list(&range)) {
            (Some(_), true) => (SCALAR, self.element(&range)),
            (Some(_), false) => (self.element(&range), self.value(&range)),
            (None, _) => (self.element(&range), SCALAR),
        };
        let scope = self.scope.len();
        self.scope.push((c.iter_var.clone(), first));
        if let Some(var) = &c.iter_var2 {
            self.scope.push((var.clone(), second));
        }
        let accumulator = match &init {
            Shape::List(..) => {
                let element = appended(&c.loop_step).map_or(SCALAR, |e| self.cost(e, depth + 1).1);
                Shape::List(count, Box::new(element))
            }
            _ => init,
        };
        self.scope.push((c.accu_var.clone(), accumulator.clone()));
        let (condition, _) = self.cost(&c.loop_cond, depth + 1);
        let (step, _) = self.cost(&c.loop_step, depth + 1);
        self.scope.truncate(scope);
        self.scope.push((c.accu_var.clone(), accumulator));
        let (result_cost, result) = self.cost(&c.result, depth + 1);
        self.scope.truncate(scope);
        let body = count.saturating_mul(condition.saturating_add(step));
        (range_cost.saturating_add(init_cost).saturating_add(result_cost).saturating_add(body), result)
    }
}

/// The element a `map` or `filter` step appends (`__result__ + [e]`), wherever it is in the step.
fn appended(step: &IdedExpr) -> Option<&IdedExpr> {
    let Expr::Call(call) = &step.expr else { return None };
    if call.func_name == "_+_" {
        if let Some(Expr::List(list)) = call.args.get(1).map(|a| &a.expr) {
            if list.elements.len() == 1 {
                return list.elements.first();
            }
        }
    }
    call.args.iter().find_map(appended)
}
