//! The screens: one file each.

pub mod dashboard;
pub mod landing;
pub mod site;
