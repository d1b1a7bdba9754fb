//! Tests of protobuf request decoding: fixtures encoded with k8s-pb, hostile bodies.
