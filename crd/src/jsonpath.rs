//! The JSONPath subset CRD `additionalPrinterColumns` use, evaluated like client-go's
//! `jsonpath` with `AllowMissingKeys(true)`: missing keys give no result rather than an error.
//!
//! Supported: `.field`, `['field']`, `[N]` (negative from the end), `[*]`, `.*`, and filters
//! `[?(@.a.b == "x")]` with `==`, `!=`, `<`, `<=`, `>`, `>=` or plain existence `[?(@.a)]`.

use serde_json::Value;

use crate::columns::ColumnError;

/// A parsed path; evaluate it with [`JsonPath::find`].
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    Wildcard,
    Filter(Filter),
}

#[derive(Clone, Debug, PartialEq)]
struct Filter {
    left: Vec<Step>,
    comparison: Option<(Operator, Literal)>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Operator {
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

#[derive(Clone, Debug, PartialEq)]
enum Literal {
    Text(String),
    Number(f64),
    Bool(bool),
}

impl JsonPath {
    /// Parses `path` (for example `.status.conditions[?(@.type=="Ready")].status`).
    pub fn parse(path: &str) -> Result<JsonPath, ColumnError> {
        let invalid = |reason: &str| ColumnError::InvalidJsonPath { path: path.to_string(), reason: reason.to_string() };
        let trimmed = path.trim();
        let body = trimmed.strip_prefix('{').and_then(|p| p.strip_suffix('}')).unwrap_or(trimmed);
        let body = body.strip_prefix('$').unwrap_or(body);
        let mut parser = Parser { chars: body.chars().collect(), position: 0 };
        let steps = parser.steps(false).map_err(|reason| invalid(&reason))?;
        if parser.position < parser.chars.len() {
            return Err(invalid("unexpected trailing characters"));
        }
        Ok(JsonPath { steps })
    }

    /// Every value the path selects in `root`, in document order.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        evaluate(&self.steps, vec![root])
    }
}

fn evaluate<'a>(steps: &[Step], mut current: Vec<&'a Value>) -> Vec<&'a Value> {
    for step in steps {
        current = current.into_iter().flat_map(|value| apply(step, value)).collect();
    }
    current
}

fn apply<'a>(step: &Step, value: &'a Value) -> Vec<&'a Value> {
    match (step, value) {
        (Step::Field(key), Value::Object(map)) => map.get(key).into_iter().collect(),
        (Step::Index(index), Value::Array(items)) => {
            let resolved = if *index < 0 { i64::try_from(items.len()).ok().map(|len| len + index) } else { Some(*index) };
            resolved.and_then(|i| usize::try_from(i).ok()).and_then(|i| items.get(i)).into_iter().collect()
        }
        (Step::Wildcard, Value::Array(items)) => items.iter().collect(),
        (Step::Wildcard, Value::Object(map)) => map.values().collect(),
        (Step::Filter(filter), Value::Array(items)) => items.iter().filter(|item| filter.matches(item)).collect(),
        _ => Vec::new(),
    }
}

impl Filter {
    fn matches(&self, item: &Value) -> bool {
        let lefts = evaluate(&self.left, vec![item]);
        // client-go skips items without the field and refuses to compare several at once.
        let [left] = lefts.as_slice() else {
            return false;
        };
        let Some((operator, literal)) = &self.comparison else {
            return true;
        };
        match (left, literal) {
            (Value::String(left), Literal::Text(right)) => operator.holds(left.as_str().cmp(right.as_str())),
            (Value::Bool(left), Literal::Bool(right)) => match operator {
                Operator::Equal => left == right,
                Operator::NotEqual => left != right,
                _ => false,
            },
            (Value::Number(left), Literal::Number(right)) => {
                left.as_f64().and_then(|l| l.partial_cmp(right)).is_some_and(|ordering| operator.holds(ordering))
            }
            _ => false,
        }
    }
}

impl Operator {
    fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            Operator::Equal => ordering == Equal,
            Operator::NotEqual => ordering != Equal,
            Operator::Less => ordering == Less,
            Operator::LessOrEqual => ordering != Greater,
            Operator::Greater => ordering == Greater,
            Operator::GreaterOrEqual => ordering != Less,
        }
    }
}

/// A small recursive-descent parser over the path's characters.
struct Parser {
    chars: Vec<char>,
    position: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.position).copied()
    }

    fn eat(&mut self, expected: char) -> bool {
        let matched = self.peek() == Some(expected);
        if matched {
            self.position += 1;
        }
        matched
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.position += 1;
        }
    }

    /// Steps until the end, or (inside a filter) until a comparison operator or `)`.
    fn steps(&mut self, in_filter: bool) -> Result<Vec<Step>, String> {
        let mut steps = Vec::new();
        while let Some(next) = self.peek() {
            match next {
                '.' if self.chars.get(self.position + 1) == Some(&'.') => return Err("recursive descent is not supported".into()),
                '.' => {
                    self.position += 1;
                    steps.push(self.field()?);
                }
                '[' => {
                    self.position += 1;
                    steps.push(self.bracket()?);
                }
                _ if in_filter => break,
                other => return Err(format!("unexpected character {other:?}")),
            }
        }
        Ok(steps)
    }

    /// A dotted field name; `\.` escapes a dot, `*` alone is a wildcard.
    fn field(&mut self) -> Result<Step, String> {
        let mut name = String::new();
        while let Some(next) = self.peek() {
            match next {
                '\\' if self.chars.get(self.position + 1) == Some(&'.') => {
                    name.push('.');
                    self.position += 2;
                }
                '.' | '[' | ' ' | '=' | '!' | '<' | '>' | ')' => break,
                other => {
                    name.push(other);
                    self.position += 1;
                }
            }
        }
        match name.as_str() {
            "" => Err("empty field name".into()),
            "*" => Ok(Step::Wildcard),
            _ => Ok(Step::Field(name)),
        }
    }

    /// The inside of `[...]`: an index, `*`, a quoted key or a `?(...)` filter.
    fn bracket(&mut self) -> Result<Step, String> {
        self.skip_spaces();
        let step = match self.peek() {
            Some('*') => {
                self.position += 1;
                Step::Wildcard
            }
            Some('\'' | '"') => Step::Field(self.quoted()?),
            Some('?') => {
                self.position += 1;
                Step::Filter(self.filter()?)
            }
            _ => Step::Index(self.integer()?),
        };
        self.skip_spaces();
        if !self.eat(']') {
            return Err("expected ']'".into());
        }
        Ok(step)
    }

    fn integer(&mut self) -> Result<i64, String> {
        let start = self.position;
        if self.peek() == Some('-') {
            self.position += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.position += 1;
        }
        let digits: String = self.chars[start..self.position].iter().collect();
        digits.parse().map_err(|_| format!("invalid array index {digits:?}"))
    }

    /// A single- or double-quoted string with backslash escapes.
    fn quoted(&mut self) -> Result<String, String> {
        let quote = self.peek().ok_or("expected a quote")?;
        self.position += 1;
        let mut text = String::new();
        loop {
            match self.peek() {
                None => return Err("unterminated string".into()),
                Some('\\') => {
                    self.position += 1;
                    text.push(self.peek().ok_or("unterminated string")?);
                    self.position += 1;
                }
                Some(c) if c == quote => {
                    self.position += 1;
                    return Ok(text);
                }
                Some(c) => {
                    text.push(c);
                    self.position += 1;
                }
            }
        }
    }

    /// `(@.path op literal)` or `(@.path)`.
    fn filter(&mut self) -> Result<Filter, String> {
        if !self.eat('(') {
            return Err("expected '(' after '?'".into());
        }
        self.skip_spaces();
        if !self.eat('@') {
            return Err("filters must start with '@'".into());
        }
        let left = self.steps(true)?;
        self.skip_spaces();
        let comparison = match self.operator() {
            Some(operator) => {
                self.skip_spaces();
                Some((operator, self.literal()?))
            }
            None => None,
        };
        self.skip_spaces();
        if !self.eat(')') {
            return Err("expected ')' to close the filter".into());
        }
        Ok(Filter { left, comparison })
    }

    fn operator(&mut self) -> Option<Operator> {
        let operators = [
            ("==", Operator::Equal),
            ("!=", Operator::NotEqual),
            ("<=", Operator::LessOrEqual),
            (">=", Operator::GreaterOrEqual),
            ("<", Operator::Less),
            (">", Operator::Greater),
        ];
        for (symbol, operator) in operators {
            let end = self.position + symbol.len();
            if end <= self.chars.len() && self.chars[self.position..end].iter().copied().eq(symbol.chars()) {
                self.position = end;
                return Some(operator);
            }
        }
        None
    }

    fn literal(&mut self) -> Result<Literal, String> {
        if matches!(self.peek(), Some('\'' | '"')) {
            return self.quoted().map(Literal::Text);
        }
        let start = self.position;
        while self.peek().is_some_and(|c| !c.is_whitespace() && c != ')') {
            self.position += 1;
        }
        let word: String = self.chars[start..self.position].iter().collect();
        match word.as_str() {
            "true" => Ok(Literal::Bool(true)),
            "false" => Ok(Literal::Bool(false)),
            _ => word.parse().map(Literal::Number).map_err(|_| format!("invalid literal {word:?}")),
        }
    }
}
