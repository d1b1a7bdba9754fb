//! The apiextensions types whose JSON is not an object of fields, in both directions: `JSON` (any value) and the
//! `JSONSchemaPropsOr{Array,Bool,StringArray}` unions of CustomResourceDefinition schemas, as their Go
//! `MarshalJSON`/`UnmarshalJSON` write and read them.

use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    Json, JsonSchemaProps, JsonSchemaPropsOrArray, JsonSchemaPropsOrBool, JsonSchemaPropsOrStringArray,
};
use serde_json::Value;

use super::from_json::{Encoded, FromJson};
use super::to_json::{Converted, DecodeFailure, ToJson};

/// `JSON`: the embedded document itself.
impl ToJson for Json {
    fn to_json(&self, _keep_zero: bool) -> Converted {
        match self.raw.as_deref() {
            None | Some([]) => Ok(None),
            Some(bytes) => serde_json::from_slice(bytes)
                .map(Some)
                .map_err(|error| DecodeFailure::EmbeddedJson(error.to_string())),
        }
    }
}

impl FromJson for Json {
    fn from_json(value: &Value) -> Encoded<Self> {
        Ok(Json { raw: (!value.is_null()).then(|| value.to_string().into_bytes()) })
    }
}

/// A schema, or a list of schemas; neither is `null`, so omitted.
impl ToJson for JsonSchemaPropsOrArray {
    fn to_json(&self, keep_zero: bool) -> Converted {
        match &self.schema {
            Some(schema) => schema.to_json(keep_zero),
            None => self.j_son_schemas.to_json(keep_zero),
        }
    }
}

impl FromJson for JsonSchemaPropsOrArray {
    fn from_json(value: &Value) -> Encoded<Self> {
        match value {
            Value::Array(_) => Ok(JsonSchemaPropsOrArray { schema: None, j_son_schemas: Vec::from_json(value)? }),
            _ => Ok(JsonSchemaPropsOrArray { schema: Option::from_json(value)?.map(Box::new), j_son_schemas: Vec::new() }),
        }
    }
}

/// A schema (which allows), or `true`/`false`.
impl ToJson for JsonSchemaPropsOrBool {
    fn to_json(&self, keep_zero: bool) -> Converted {
        match &self.schema {
            Some(schema) => schema.to_json(keep_zero),
            None => Ok(Some(Value::Bool(self.allows.unwrap_or(false)))),
        }
    }
}

impl FromJson for JsonSchemaPropsOrBool {
    fn from_json(value: &Value) -> Encoded<Self> {
        match value {
            Value::Bool(allows) => Ok(JsonSchemaPropsOrBool { allows: Some(*allows), schema: None }),
            _ => Ok(JsonSchemaPropsOrBool { allows: Some(true), schema: Some(Box::new(JsonSchemaProps::from_json(value)?)) }),
        }
    }
}

/// A list of property names, or a schema; neither is `null`, so omitted.
impl ToJson for JsonSchemaPropsOrStringArray {
    fn to_json(&self, keep_zero: bool) -> Converted {
        if !self.property.is_empty() {
            return self.property.to_json(keep_zero);
        }
        self.schema.to_json(keep_zero)
    }
}

impl FromJson for JsonSchemaPropsOrStringArray {
    fn from_json(value: &Value) -> Encoded<Self> {
        match value {
            Value::Array(_) => Ok(JsonSchemaPropsOrStringArray { schema: None, property: Vec::from_json(value)? }),
            _ => Ok(JsonSchemaPropsOrStringArray { schema: Option::from_json(value)?, property: Vec::new() }),
        }
    }
}
