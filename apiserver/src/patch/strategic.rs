//! Strategic merge patch (being written).
