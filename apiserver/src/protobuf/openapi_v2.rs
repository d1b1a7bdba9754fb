//! gnostic's `openapi.v2` protobuf messages (github.com/google/gnostic-models `openapiv2/OpenAPIv2.proto`), which
//! kubectl and client-go `proto.Unmarshal` from `GET /openapi/v2` with
//! `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (client-side validation, `explain`).
//!
//! No crate carries them, so the messages a Swagger 2.0 document needs are declared here by hand, field numbers
//! as in the .proto (proto3: scalars are plain values, messages optional). The OAuth2 security schemes are left
//! out (the documents served here have none). `convert.rs` builds them from the JSON document, as gnostic's
//! `ParseDocument` does.

// The oneofs mirror the .proto; the document is built once per space, so unboxed variants cost nothing that matters.
#![allow(clippy::large_enum_variant)]

mod convert;
#[cfg(test)]
mod tests;

pub use convert::document_from_json;

/// A `google.protobuf.Any` (gnostic's extensions may carry one; this server writes YAML text instead).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProtobufAny {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// Any JSON value (defaults, examples, enum members, vendor extensions), as YAML text.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    #[prost(message, optional, tag = "1")]
    pub value: Option<ProtobufAny>,
    #[prost(string, tag = "2")]
    pub yaml: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedAny {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Document {
    #[prost(string, tag = "1")]
    pub swagger: String,
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    #[prost(string, tag = "3")]
    pub host: String,
    #[prost(string, tag = "4")]
    pub base_path: String,
    #[prost(string, repeated, tag = "5")]
    pub schemes: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    pub consumes: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub produces: Vec<String>,
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
    #[prost(message, optional, tag = "10")]
    pub parameters: Option<ParameterDefinitions>,
    #[prost(message, optional, tag = "11")]
    pub responses: Option<ResponseDefinitions>,
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    #[prost(message, optional, tag = "13")]
    pub security_definitions: Option<SecurityDefinitions>,
    #[prost(message, repeated, tag = "14")]
    pub tags: Vec<Tag>,
    #[prost(message, optional, tag = "15")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, repeated, tag = "16")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Info {
    #[prost(string, tag = "1")]
    pub title: String,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, tag = "4")]
    pub terms_of_service: String,
    #[prost(message, optional, tag = "5")]
    pub contact: Option<Contact>,
    #[prost(message, optional, tag = "6")]
    pub license: Option<License>,
    #[prost(message, repeated, tag = "7")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Contact {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub url: String,
    #[prost(string, tag = "3")]
    pub email: String,
    #[prost(message, repeated, tag = "4")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct License {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub url: String,
    #[prost(message, repeated, tag = "3")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExternalDocs {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub url: String,
    #[prost(message, repeated, tag = "3")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Tag {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(message, optional, tag = "3")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, repeated, tag = "4")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Paths {
    #[prost(message, repeated, tag = "1")]
    pub vendor_extension: Vec<NamedAny>,
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedPathItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<PathItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PathItem {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    #[prost(message, optional, tag = "6")]
    pub options: Option<Operation>,
    #[prost(message, optional, tag = "7")]
    pub head: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Operation {
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    #[prost(string, tag = "2")]
    pub summary: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(message, optional, tag = "4")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(string, tag = "5")]
    pub operation_id: String,
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    #[prost(bool, tag = "11")]
    pub deprecated: bool,
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ParametersItem {
    #[prost(oneof = "parameters_item::Oneof", tags = "1, 2")]
    pub oneof: Option<parameters_item::Oneof>,
}

pub mod parameters_item {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Parameter(super::Parameter),
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct JsonReference {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(string, tag = "2")]
    pub description: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Parameter {
    #[prost(oneof = "parameter::Oneof", tags = "1, 2")]
    pub oneof: Option<parameter::Oneof>,
}

pub mod parameter {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        BodyParameter(super::BodyParameter),
        #[prost(message, tag = "2")]
        NonBodyParameter(super::NonBodyParameter),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BodyParameter {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(bool, tag = "4")]
    pub required: bool,
    #[prost(message, optional, tag = "5")]
    pub schema: Option<Schema>,
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NonBodyParameter {
    #[prost(oneof = "non_body_parameter::Oneof", tags = "1, 2, 3, 4")]
    pub oneof: Option<non_body_parameter::Oneof>,
}

pub mod non_body_parameter {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        HeaderParameterSubSchema(super::HeaderParameterSubSchema),
        #[prost(message, tag = "2")]
        FormDataParameterSubSchema(super::FormDataParameterSubSchema),
        #[prost(message, tag = "3")]
        QueryParameterSubSchema(super::QueryParameterSubSchema),
        #[prost(message, tag = "4")]
        PathParameterSubSchema(super::PathParameterSubSchema),
    }
}

/// The fields every non-body parameter shares; each sub-schema message numbers them differently.
macro_rules! parameter_sub_schema {
    ($name:ident { $($field:ident : [$($attr:ident),*] $type:ty = $tag:literal),* $(,)? }) => {
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct $name {
            $(#[prost($($attr,)* tag = $tag)] pub $field: $type,)*
        }
    };
}

parameter_sub_schema!(HeaderParameterSubSchema {
    required: [bool] bool = "1", r#in: [string] String = "2", description: [string] String = "3", name: [string] String = "4",
    r#type: [string] String = "5", format: [string] String = "6", items: [message, optional] Option<PrimitivesItems> = "7",
    collection_format: [string] String = "8", default: [message, optional] Option<Any> = "9", maximum: [double] f64 = "10",
    exclusive_maximum: [bool] bool = "11", minimum: [double] f64 = "12", exclusive_minimum: [bool] bool = "13",
    max_length: [int64] i64 = "14", min_length: [int64] i64 = "15", pattern: [string] String = "16",
    max_items: [int64] i64 = "17", min_items: [int64] i64 = "18", unique_items: [bool] bool = "19",
    r#enum: [message, repeated] Vec<Any> = "20", multiple_of: [double] f64 = "21", vendor_extension: [message, repeated] Vec<NamedAny> = "22",
});

parameter_sub_schema!(FormDataParameterSubSchema {
    required: [bool] bool = "1", r#in: [string] String = "2", description: [string] String = "3", name: [string] String = "4",
    allow_empty_value: [bool] bool = "5", r#type: [string] String = "6", format: [string] String = "7",
    items: [message, optional] Option<PrimitivesItems> = "8", collection_format: [string] String = "9",
    default: [message, optional] Option<Any> = "10", maximum: [double] f64 = "11", exclusive_maximum: [bool] bool = "12",
    minimum: [double] f64 = "13", exclusive_minimum: [bool] bool = "14", max_length: [int64] i64 = "15",
    min_length: [int64] i64 = "16", pattern: [string] String = "17", max_items: [int64] i64 = "18",
    min_items: [int64] i64 = "19", unique_items: [bool] bool = "20", r#enum: [message, repeated] Vec<Any> = "21",
    multiple_of: [double] f64 = "22", vendor_extension: [message, repeated] Vec<NamedAny> = "23",
});

parameter_sub_schema!(QueryParameterSubSchema {
    required: [bool] bool = "1", r#in: [string] String = "2", description: [string] String = "3", name: [string] String = "4",
    allow_empty_value: [bool] bool = "5", r#type: [string] String = "6", format: [string] String = "7",
    items: [message, optional] Option<PrimitivesItems> = "8", collection_format: [string] String = "9",
    default: [message, optional] Option<Any> = "10", maximum: [double] f64 = "11", exclusive_maximum: [bool] bool = "12",
    minimum: [double] f64 = "13", exclusive_minimum: [bool] bool = "14", max_length: [int64] i64 = "15",
    min_length: [int64] i64 = "16", pattern: [string] String = "17", max_items: [int64] i64 = "18",
    min_items: [int64] i64 = "19", unique_items: [bool] bool = "20", r#enum: [message, repeated] Vec<Any> = "21",
    multiple_of: [double] f64 = "22", vendor_extension: [message, repeated] Vec<NamedAny> = "23",
});

parameter_sub_schema!(PathParameterSubSchema {
    required: [bool] bool = "1", r#in: [string] String = "2", description: [string] String = "3", name: [string] String = "4",
    r#type: [string] String = "5", format: [string] String = "6", items: [message, optional] Option<PrimitivesItems> = "7",
    collection_format: [string] String = "8", default: [message, optional] Option<Any> = "9", maximum: [double] f64 = "10",
    exclusive_maximum: [bool] bool = "11", minimum: [double] f64 = "12", exclusive_minimum: [bool] bool = "13",
    max_length: [int64] i64 = "14", min_length: [int64] i64 = "15", pattern: [string] String = "16",
    max_items: [int64] i64 = "17", min_items: [int64] i64 = "18", unique_items: [bool] bool = "19",
    r#enum: [message, repeated] Vec<Any> = "20", multiple_of: [double] f64 = "21", vendor_extension: [message, repeated] Vec<NamedAny> = "22",
});

parameter_sub_schema!(PrimitivesItems {
    r#type: [string] String = "1", format: [string] String = "2", items: [message, optional, boxed] Option<Box<PrimitivesItems>> = "3",
    collection_format: [string] String = "4", default: [message, optional] Option<Any> = "5", maximum: [double] f64 = "6",
    exclusive_maximum: [bool] bool = "7", minimum: [double] f64 = "8", exclusive_minimum: [bool] bool = "9",
    max_length: [int64] i64 = "10", min_length: [int64] i64 = "11", pattern: [string] String = "12",
    max_items: [int64] i64 = "13", min_items: [int64] i64 = "14", unique_items: [bool] bool = "15",
    r#enum: [message, repeated] Vec<Any> = "16", multiple_of: [double] f64 = "17", vendor_extension: [message, repeated] Vec<NamedAny> = "18",
});

#[derive(Clone, PartialEq, prost::Message)]
pub struct Responses {
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
    #[prost(message, repeated, tag = "2")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedResponseValue {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<ResponseValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseValue {
    #[prost(oneof = "response_value::Oneof", tags = "1, 2")]
    pub oneof: Option<response_value::Oneof>,
}

pub mod response_value {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Response(super::Response),
        #[prost(message, tag = "2")]
        JsonReference(super::JsonReference),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Response {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
    #[prost(message, optional, tag = "3")]
    pub headers: Option<Headers>,
    #[prost(message, optional, tag = "4")]
    pub examples: Option<Examples>,
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SchemaItem {
    #[prost(oneof = "schema_item::Oneof", tags = "1, 2")]
    pub oneof: Option<schema_item::Oneof>,
}

pub mod schema_item {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Schema(super::Schema),
        #[prost(message, tag = "2")]
        FileSchema(super::FileSchema),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FileSchema {
    #[prost(string, tag = "1")]
    pub format: String,
    #[prost(string, tag = "2")]
    pub title: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(message, optional, tag = "4")]
    pub default: Option<Any>,
    #[prost(string, repeated, tag = "5")]
    pub required: Vec<String>,
    #[prost(string, tag = "6")]
    pub r#type: String,
    #[prost(bool, tag = "7")]
    pub read_only: bool,
    #[prost(message, optional, tag = "8")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, optional, tag = "9")]
    pub example: Option<Any>,
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Headers {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedHeader>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedHeader {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Header>,
}

parameter_sub_schema!(Header {
    r#type: [string] String = "1", format: [string] String = "2", items: [message, optional] Option<PrimitivesItems> = "3",
    collection_format: [string] String = "4", default: [message, optional] Option<Any> = "5", maximum: [double] f64 = "6",
    exclusive_maximum: [bool] bool = "7", minimum: [double] f64 = "8", exclusive_minimum: [bool] bool = "9",
    max_length: [int64] i64 = "10", min_length: [int64] i64 = "11", pattern: [string] String = "12",
    max_items: [int64] i64 = "13", min_items: [int64] i64 = "14", unique_items: [bool] bool = "15",
    r#enum: [message, repeated] Vec<Any> = "16", multiple_of: [double] f64 = "17", description: [string] String = "18",
    vendor_extension: [message, repeated] Vec<NamedAny> = "19",
});

#[derive(Clone, PartialEq, prost::Message)]
pub struct Examples {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Schema {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(string, tag = "3")]
    pub title: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    #[prost(double, tag = "6")]
    pub multiple_of: f64,
    #[prost(double, tag = "7")]
    pub maximum: f64,
    #[prost(bool, tag = "8")]
    pub exclusive_maximum: bool,
    #[prost(double, tag = "9")]
    pub minimum: f64,
    #[prost(bool, tag = "10")]
    pub exclusive_minimum: bool,
    #[prost(int64, tag = "11")]
    pub max_length: i64,
    #[prost(int64, tag = "12")]
    pub min_length: i64,
    #[prost(string, tag = "13")]
    pub pattern: String,
    #[prost(int64, tag = "14")]
    pub max_items: i64,
    #[prost(int64, tag = "15")]
    pub min_items: i64,
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    #[prost(int64, tag = "17")]
    pub max_properties: i64,
    #[prost(int64, tag = "18")]
    pub min_properties: i64,
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    #[prost(message, optional, boxed, tag = "21")]
    pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    pub all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    #[prost(string, tag = "26")]
    pub discriminator: String,
    #[prost(bool, tag = "27")]
    pub read_only: bool,
    #[prost(message, optional, tag = "28")]
    pub xml: Option<Xml>,
    #[prost(message, optional, tag = "29")]
    pub external_docs: Option<ExternalDocs>,
    #[prost(message, optional, tag = "30")]
    pub example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AdditionalPropertiesItem {
    #[prost(oneof = "additional_properties_item::Oneof", tags = "1, 2")]
    pub oneof: Option<additional_properties_item::Oneof>,
}

pub mod additional_properties_item {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        Schema(super::Schema),
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Xml {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub namespace: String,
    #[prost(string, tag = "3")]
    pub prefix: String,
    #[prost(bool, tag = "4")]
    pub attribute: bool,
    #[prost(bool, tag = "5")]
    pub wrapped: bool,
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ParameterDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedParameter>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedParameter {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Parameter>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedResponse>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedResponse {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Response>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityRequirement {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedStringArray>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedStringArray {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<StringArray>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSecurityDefinitionsItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedSecurityDefinitionsItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<SecurityDefinitionsItem>,
}

/// Of gnostic's six schemes only the two without OAuth2 scopes are declared (tags 1 and 2).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityDefinitionsItem {
    #[prost(oneof = "security_definitions_item::Oneof", tags = "1, 2")]
    pub oneof: Option<security_definitions_item::Oneof>,
}

pub mod security_definitions_item {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Oneof {
        #[prost(message, tag = "1")]
        BasicAuthenticationSecurity(super::BasicAuthenticationSecurity),
        #[prost(message, tag = "2")]
        ApiKeySecurity(super::ApiKeySecurity),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BasicAuthenticationSecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(message, repeated, tag = "3")]
    pub vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ApiKeySecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}
