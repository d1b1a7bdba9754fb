//! The label selector grammar of apimachinery's `labels.Parse`, token for token, so that a malformed selector is
//! refused with the message kube-apiserver gives (`unable to parse requirement: found '=', expected: identifier`):
//! a lexer, a recursive-descent parser and `NewRequirement`'s checks of keys and values.

use crate::registry::validate::{label_value_errors, qualified_name_errors};

/// An operator of a requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One requirement: `key <operator> values`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    pub values: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(text: &[u8]) -> Option<Token> {
    Some(match text {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(byte: u8) -> bool {
    matches!(byte, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Splits `selector` into tokens, as kube's `Lexer` does.
fn scan(selector: &str) -> Vec<(Token, String)> {
    let bytes = selector.as_bytes();
    let mut position = 0;
    let mut items = Vec::new();
    loop {
        while position < bytes.len() && is_whitespace(bytes[position]) {
            position += 1;
        }
        let Some(&first) = bytes.get(position) else {
            items.push((Token::EndOfString, String::new()));
            return items;
        };
        if is_special(first) {
            // The longest run of special characters that is still an operator.
            let mut last = None;
            let mut end = position;
            while end < bytes.len() && is_special(bytes[end]) {
                match keyword(&bytes[position..=end]) {
                    Some(token) => last = Some((token, end + 1)),
                    None if last.is_some() => break,
                    None => {}
                }
                end += 1;
            }
            match last {
                Some((token, stop)) => {
                    items.push((token, text(&bytes[position..stop])));
                    position = stop;
                }
                None => {
                    items.push((Token::Error, format!("error expected: keyword found '{}'", text(&bytes[position..end]))));
                    position = end;
                }
            }
        } else {
            let start = position;
            while position < bytes.len() && !is_special(bytes[position]) && !is_whitespace(bytes[position]) {
                position += 1;
            }
            let word = &bytes[start..position];
            items.push((keyword(word).unwrap_or(Token::Identifier), text(word)));
        }
    }
}

/// Where the parser is: `in` and `notin` are operators after a key, identifiers where values are expected.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn token(&self, index: usize, context: Context) -> (Token, String) {
        let (token, literal) = self.items.get(index).cloned().unwrap_or((Token::EndOfString, String::new()));
        match token {
            Token::In | Token::NotIn if context == Context::Values => (Token::Identifier, literal),
            other => (other, literal),
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        self.token(self.position, context)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        self.position += 1;
        self.token(self.position - 1, context)
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self.requirement().map_err(|err| format!("unable to parse requirement: {err}"))?;
                    requirements.push(requirement);
                    let (next, literal) = self.consume(Context::Values);
                    match next {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (after, literal) = self.lookahead(Context::Values);
                            if after != Token::Identifier && after != Token::DoesNotExist {
                                return Err(format!("found '{literal}', expected: identifier after ','"));
                            }
                        }
                        _ => return Err(format!("found '{literal}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => return Err(format!("found '{literal}', expected: !, identifier, or 'end of string'")),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.key_and_inferred_operator()?;
        if let Some(operator) = inferred {
            return new_requirement(key, operator, Vec::new());
        }
        let operator = self.operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        new_requirement(key, operator, values)
    }

    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let (mut token, mut literal) = self.consume(Context::Values);
        let negated = token == Token::DoesNotExist;
        if negated {
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        check_key(&literal, "<nil>")?;
        let (next, _) = self.lookahead(Context::Values);
        let unary = matches!(next, Token::EndOfString | Token::Comma);
        let operator = match (negated, unary) {
            (true, _) => Some(Operator::DoesNotExist),
            (false, true) => Some(Operator::Exists),
            (false, false) => None,
        };
        Ok((literal, operator))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals | Token::DoubleEquals => Operator::Equals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{literal}', expected: in, notin, =, ==, !=, gt, lt")),
        })
    }

    fn set_values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.identifiers()?;
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{literal}', expected: ',', ')' or identifier")),
        }
    }

    /// A (possibly empty) comma-separated list of (possibly empty) identifiers, as a sorted set.
    fn identifiers(&mut self) -> Result<Vec<String>, String> {
        let mut values = std::collections::BTreeSet::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.insert(literal);
                    let (next, literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values.into_iter().collect()),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Token::ClosedPar {
                        values.insert(String::new());
                        return Ok(values.into_iter().collect());
                    }
                    if next == Token::Comma {
                        self.consume(Context::Values);
                        values.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            return Ok(vec![literal]);
        }
        Err(format!("found '{literal}', expected: identifier"))
    }
}

/// kube's `validateLabelKey`: `<field>: Invalid value: "<key>": <why>`.
fn check_key(key: &str, field: &str) -> Result<(), String> {
    let errors = qualified_name_errors(key);
    if errors.is_empty() {
        return Ok(());
    }
    Err(format!("{field}: Invalid value: {}: {}", go_quote(key), errors.join("; ")))
}

/// kube's `NewRequirement` checks (the key, the number of values, each value), aggregated as kube aggregates a
/// field error list: one message alone, several in brackets.
fn new_requirement(key: String, operator: Operator, values: Vec<String>) -> Result<Requirement, String> {
    let mut errors: Vec<String> = Vec::new();
    let mut push = |message: String| {
        if !errors.contains(&message) {
            errors.push(message);
        }
    };
    if let Err(message) = check_key(&key, "key") {
        push(message);
    }
    let listed = format!("[]string{{{}}}", values.iter().map(|v| go_quote(v)).collect::<Vec<_>>().join(", "));
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => {
            push(format!("values: Invalid value: {listed}: for 'in', 'notin' operators, values set can't be empty"));
        }
        Operator::Equals | Operator::NotEquals if values.len() != 1 => {
            push(format!("values: Invalid value: {listed}: exact-match compatibility requires one single value"));
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            push(format!("values: Invalid value: {listed}: values set must be empty for exists and does not exist"));
        }
        Operator::GreaterThan | Operator::LessThan => {
            if values.len() != 1 {
                push(format!("values: Invalid value: {listed}: for 'Gt', 'Lt' operators, exactly one value is required"));
            }
            for (i, value) in values.iter().enumerate() {
                if value.parse::<i64>().is_err() {
                    push(format!("values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer", go_quote(value)));
                }
            }
        }
        _ => {}
    }
    for (i, value) in values.iter().enumerate() {
        let why = label_value_errors(value);
        if !why.is_empty() {
            push(format!("values[{i}][{key}]: Invalid value: {}: {}", go_quote(value), why.join("; ")));
        }
    }
    match errors.len() {
        0 => Ok(Requirement { key, operator, values }),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// Go's `%q` for the strings a selector holds (printable text; control characters escaped).
fn go_quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parses a label selector; the error is kube-apiserver's message, word for word.
pub fn parse(selector: &str) -> Result<Vec<Requirement>, String> {
    let mut parser = Parser { items: scan(selector), position: 0 };
    let mut requirements = parser.parse()?;
    requirements.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(requirements)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_selectors_have_kube_apiserver_messages() {
        let long = "x".repeat(64);
        let rows = [
            ("a!==b", "unable to parse requirement: found '=', expected: identifier".to_owned()),
            ("a,", "found '', expected: identifier after ','".to_owned()),
            ("a in b", "unable to parse requirement: found 'b' expected: '('".to_owned()),
            ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'".to_owned()),
            ("=b", "found '=', expected: !, identifier, or 'end of string'".to_owned()),
            ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".to_owned()),
            ("a=b c", "found 'c', expected: ',' or 'end of string'".to_owned()),
            ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer".to_owned()),
            (&format!("a={long}"), format!("unable to parse requirement: values[0][a]: Invalid value: \"{long}\": must be no more than 63 characters")),
            ("a=-b", "unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_owned()),
            ("_a", "unable to parse requirement: <nil>: Invalid value: \"_a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_owned()),
            ("Example.com/a=b", "unable to parse requirement: <nil>: Invalid value: \"Example.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_owned()),
        ];
        for (selector, expected) in rows {
            assert_eq!(parse(selector), Err(expected), "{selector}");
        }
    }

    #[test]
    fn well_formed_selectors_parse_as_kube_does() {
        let requirement = |key: &str, operator, values: &[&str]| Requirement {
            key: key.to_owned(),
            operator,
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        };
        assert_eq!(parse("").expect("empty"), vec![]);
        assert_eq!(parse(" b , !a ").expect("spaces"), vec![requirement("a", Operator::DoesNotExist, &[]), requirement("b", Operator::Exists, &[])]);
        assert_eq!(parse("x in (foo,,baz),y,z notin ()").expect("kube's example"), vec![
            requirement("x", Operator::In, &["", "baz", "foo"]),
            requirement("y", Operator::Exists, &[]),
            requirement("z", Operator::NotIn, &[""]),
        ]);
        assert_eq!(parse("a==b,c!=,in in (in,notin)").expect("keywords as values"), vec![
            requirement("a", Operator::Equals, &["b"]),
            requirement("c", Operator::NotEquals, &[""]),
            requirement("in", Operator::In, &["in", "notin"]),
        ]);
        assert_eq!(parse("n>5,m<2").expect("gt, lt"), vec![requirement("m", Operator::LessThan, &["2"]), requirement("n", Operator::GreaterThan, &["5"])]);
    }
}
