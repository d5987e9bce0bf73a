//! A source file of op kernels (WGSL or CUDA C), declared by the op that launches it.

/// One source file of op kernels. Compiled modules and programs are cached by its name,
/// which is unique.
#[derive(Debug)]
pub(crate) struct ProgramSource {
    /// The file's name (the cache key; compilers report it in their logs).
    pub name: &'static str,
    /// The code.
    pub text: &'static str,
    /// Code the file builds on (helpers it calls), prepended to it in this order.
    pub preludes: &'static [&'static str],
}

impl PartialEq for ProgramSource {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for ProgramSource {}

impl std::hash::Hash for ProgramSource {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}
