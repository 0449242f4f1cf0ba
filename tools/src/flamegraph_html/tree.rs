//! The call tree behind the HTML flame graph: the stacks of one profile, or of two (a
//! differential flame graph), merged root first by function, each node with its self weight in
//! every profile.
//!
//! A function is a frame without its line: same shown name, kind, library and source file.
//! Frames of one function at different lines are one node; the node keeps the line if they all
//! agree ([`Line`]). Children are in the functions' order (by name, as flamegraph.pl sorts
//! them), and the nodes are listed in pre-order, so that a node's subtree is the run of nodes
//! after it with a greater depth.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use symbolize::report::{Aggregate, FrameKey, Kind, Weight};

use crate::flamegraph;

/// Which frames are one function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// Same name, kind, library and file (as the SVG tells them apart): a method interpreted
    /// in one stack and JIT compiled in another is two functions.
    ByKind,
    /// The same, except that a Java method is one function whatever its tier (interpreted,
    /// JIT compiled, inlined, not recorded), shown as [`Kind::Java`]: two recordings compiled
    /// by the JIT at different moments still compare method by method.
    JavaTiersMerged,
}

impl Identity {
    fn kind(self, kind: Kind) -> Kind {
        match (self, kind) {
            (Identity::JavaTiersMerged, Kind::Interpreted | Kind::Compiled | Kind::Inlined) => {
                Kind::Java
            }
            _ => kind,
        }
    }
}

/// One distinct function of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Function {
    /// The name shown (a Java method with its parameters when it is overloaded).
    pub name: String,
    /// What kind of code.
    pub kind: Kind,
    /// Native library file name.
    pub library: Option<Arc<str>>,
    /// Source file (native frames with DWARF).
    pub file: Option<Arc<str>>,
}

/// The source line of a node: the line of every frame merged into it, if they agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// No frame of the node has a line.
    Unknown,
    /// Every frame of the node is at this line.
    At(u32),
    /// The frames of the node are at different lines (or some have none).
    Several,
}

impl Line {
    fn of(line: Option<u32>) -> Line {
        line.map_or(Line::Unknown, Line::At)
    }

    fn merge(self, other: Line) -> Line {
        if self == other {
            self
        } else {
            Line::Several
        }
    }
}

/// A node of the tree.
#[derive(Debug, Clone)]
pub struct Node {
    /// Index in [`CallTree::functions`]; `None` for the root.
    pub function: Option<u32>,
    /// 0 for the root.
    pub depth: u32,
    /// Its frames' line.
    pub line: Line,
    /// The weight of the samples whose stack ends here, per profile (in the order given to
    /// [`CallTree::build`]).
    pub self_weight: Vec<Weight>,
}

/// One or more profiles merged into one call tree.
#[derive(Debug, Clone)]
pub struct CallTree {
    /// The functions, sorted (by name, then kind, library, file).
    pub functions: Vec<Function>,
    /// The colour shade of each function ([`flamegraph::shade_of`] of its palette name, as in
    /// the SVG).
    pub shades: Vec<u8>,
    /// The nodes in pre-order; the root first.
    pub nodes: Vec<Node>,
}

/// A node while the trie is built.
struct Building {
    function: u32,
    parent: u32,
    line: Line,
    self_weight: Vec<Weight>,
}

impl CallTree {
    /// Merges the stacks of `profiles` (at least one) into one tree, frames told apart by
    /// `identity`; node weights are kept apart per profile.
    pub fn build(profiles: &[&Aggregate], identity: Identity) -> CallTree {
        let count = profiles.len();
        let (functions, shades, function_of) = functions_of(profiles, identity);
        // The root is 0; (parent, function) → node.
        let mut nodes = vec![Building {
            function: u32::MAX,
            parent: u32::MAX,
            line: Line::Unknown,
            self_weight: vec![Weight::default(); count],
        }];
        let mut child: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        for (p, agg) in profiles.iter().enumerate() {
            for (stack, w) in &agg.stacks {
                let mut node = 0u32;
                for &frame in stack.iter().rev() {
                    let function = function_of[p][frame as usize];
                    let line = Line::of(
                        agg.frames
                            .get_index(frame as usize)
                            .and_then(|frame| frame.line),
                    );
                    node = match child.get(&(node, function)) {
                        Some(&c) => {
                            let n = &mut nodes[c as usize];
                            n.line = n.line.merge(line);
                            c
                        }
                        None => {
                            let c = nodes.len() as u32;
                            nodes.push(Building {
                                function,
                                parent: node,
                                line,
                                self_weight: vec![Weight::default(); count],
                            });
                            child.insert((node, function), c);
                            c
                        }
                    };
                }
                nodes[node as usize].self_weight[p].add_weight(*w);
            }
        }
        drop(child);
        CallTree {
            functions,
            shades,
            nodes: preorder(nodes),
        }
    }

    /// The total weight (self and below) of every node in profile `profile`.
    pub fn totals(&self, profile: usize) -> Vec<Weight> {
        let mut totals: Vec<Weight> = self.nodes.iter().map(|n| n.self_weight[profile]).collect();
        let mut open: Vec<usize> = Vec::new();
        // In pre-order a node's parent is the last node before it one level up.
        let mut parent = vec![usize::MAX; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            open.truncate(n.depth as usize);
            if let Some(&p) = open.last() {
                parent[i] = p;
            }
            open.push(i);
        }
        for i in (1..self.nodes.len()).rev() {
            let w = totals[i];
            totals[parent[i]].add_weight(w);
        }
        totals
    }
}

type FunctionTable = (Vec<Function>, Vec<u8>, Vec<Vec<u32>>);

/// The sorted functions of `profiles`, their shades, and for each profile the function of
/// each of its frames.
fn functions_of(profiles: &[&Aggregate], identity: Identity) -> FunctionTable {
    let mut index: FxHashMap<Function, u32> = FxHashMap::default();
    let mut functions = Vec::new();
    let mut shades = Vec::new();
    let mut function_of = Vec::new();
    for agg in profiles {
        let overloaded = agg.overloaded();
        let mut of = Vec::with_capacity(agg.frames.len());
        for frame in agg.frames.iter() {
            let kind = identity.kind(frame.kind);
            let function = Function {
                name: frame.shown_name(&overloaded),
                kind,
                library: frame.library.clone(),
                file: frame.file.clone(),
            };
            let id = *index.entry(function.clone()).or_insert_with(|| {
                functions.push(function);
                let shown = FrameKey {
                    kind,
                    ..frame.clone()
                };
                let palette = flamegraph::palette_name(&shown, &overloaded);
                shades.push(flamegraph::shade_of(&palette));
                functions.len() as u32 - 1
            });
            of.push(id);
        }
        function_of.push(of);
    }
    // Sorted: the order children are drawn in.
    let mut order: Vec<u32> = (0..functions.len() as u32).collect();
    order.sort_by(|&a, &b| functions[a as usize].cmp(&functions[b as usize]));
    let mut rank = vec![0u32; functions.len()];
    for (r, &f) in order.iter().enumerate() {
        rank[f as usize] = r as u32;
    }
    let sorted = order
        .iter()
        .map(|&f| functions[f as usize].clone())
        .collect();
    let sorted_shades = order.iter().map(|&f| shades[f as usize]).collect();
    for of in &mut function_of {
        for f in of.iter_mut() {
            *f = rank[*f as usize];
        }
    }
    (sorted, sorted_shades, function_of)
}

/// The nodes of the trie in pre-order, children by function.
fn preorder(nodes: Vec<Building>) -> Vec<Node> {
    let n = nodes.len();
    // Children of each node, contiguous (compressed rows).
    let mut first = vec![0u32; n + 1];
    for b in nodes.iter().skip(1) {
        first[b.parent as usize + 1] += 1;
    }
    for i in 0..n {
        first[i + 1] += first[i];
    }
    let mut fill = first.clone();
    let mut children = vec![0u32; n.saturating_sub(1)];
    for (i, b) in nodes.iter().enumerate().skip(1) {
        let at = &mut fill[b.parent as usize];
        children[*at as usize] = i as u32;
        *at += 1;
    }
    for p in 0..n {
        children[first[p] as usize..first[p + 1] as usize]
            .sort_unstable_by_key(|&c| nodes[c as usize].function);
    }
    let mut slots: Vec<Option<Building>> = nodes.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n);
    let mut stack = vec![(0u32, 0u32)];
    while let Some((i, depth)) = stack.pop() {
        let Some(b) = slots[i as usize].take() else {
            continue;
        };
        out.push(Node {
            function: (i != 0).then_some(b.function),
            depth,
            line: b.line,
            self_weight: b.self_weight,
        });
        let kids = &children[first[i as usize] as usize..first[i as usize + 1] as usize];
        stack.extend(kids.iter().rev().map(|&c| (c, depth + 1)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str, kind: Kind, line: Option<u32>) -> FrameKey {
        FrameKey {
            name: Arc::from(name),
            library: kind.is_native().then(|| Arc::from("libx.so")),
            file: None,
            line,
            descriptor: None,
            kind,
        }
    }

    fn add(agg: &mut Aggregate, stack_root_first: &[FrameKey], samples: u64) {
        let mut ids: Vec<u32> = stack_root_first
            .iter()
            .map(|f| agg.frames.insert_full(f.clone()).0 as u32)
            .collect();
        ids.reverse();
        let w = Weight {
            cpu_ns: samples * 10_000_000,
            samples,
        };
        agg.stacks.entry(ids).or_default().add_weight(w);
        agg.total.add_weight(w);
    }

    #[test]
    fn lines_merge_kinds_stay_apart_and_children_are_sorted() {
        let mut agg = Aggregate::default();
        let main = frame("Main.main", Kind::Interpreted, Some(3));
        add(
            &mut agg,
            &[main.clone(), frame("b", Kind::Native, Some(10))],
            2,
        );
        add(
            &mut agg,
            &[main.clone(), frame("b", Kind::Native, Some(11))],
            1,
        );
        add(
            &mut agg,
            &[main.clone(), frame("a", Kind::Compiled, None)],
            4,
        );
        add(
            &mut agg,
            &[main.clone(), frame("a", Kind::Inlined, None)],
            1,
        );
        add(&mut agg, &[main], 5);
        let tree = CallTree::build(&[&agg], Identity::ByKind);
        let name = |n: &Node| n.function.map(|f| tree.functions[f as usize].name.clone());
        let shown: Vec<(Option<String>, u32, u64)> = tree
            .nodes
            .iter()
            .map(|n| (name(n), n.depth, n.self_weight[0].samples))
            .collect();
        assert_eq!(
            shown,
            vec![
                (None, 0, 0),
                (Some("Main.main".into()), 1, 5),
                (Some("a".into()), 2, 4),
                (Some("a".into()), 2, 1),
                (Some("b".into()), 2, 3),
            ]
        );
        // Same name: by kind, in the declaration order (Compiled before Inlined).
        assert_eq!(
            tree.functions[tree.nodes[2].function.unwrap() as usize].kind,
            Kind::Compiled
        );
        assert_eq!(tree.nodes[4].line, Line::Several);
        assert_eq!(tree.nodes[1].line, Line::At(3));
        assert_eq!(tree.nodes[2].line, Line::Unknown);
        let totals = tree.totals(0);
        assert_eq!(totals[0].samples, 13);
        assert_eq!(totals[1].samples, 13);
        assert_eq!(totals[0].cpu_ns, 130_000_000);
    }

    #[test]
    fn two_profiles_share_nodes_and_keep_their_weights() {
        let mut base = Aggregate::default();
        let mut new = Aggregate::default();
        let main = frame("main", Kind::Native, None);
        add(
            &mut base,
            &[main.clone(), frame("old", Kind::Native, None)],
            3,
        );
        add(
            &mut base,
            &[main.clone(), frame("both", Kind::Native, None)],
            1,
        );
        add(
            &mut new,
            &[main.clone(), frame("both", Kind::Native, None)],
            6,
        );
        let tree = CallTree::build(&[&new, &base], Identity::ByKind);
        let by_name = |n: &str| {
            tree.nodes
                .iter()
                .position(|x| {
                    x.function
                        .is_some_and(|f| tree.functions[f as usize].name == n)
                })
                .unwrap()
        };
        let (new_totals, base_totals) = (tree.totals(0), tree.totals(1));
        assert_eq!(new_totals[by_name("old")].samples, 0);
        assert_eq!(base_totals[by_name("old")].samples, 3);
        assert_eq!(new_totals[by_name("both")].samples, 6);
        assert_eq!(base_totals[by_name("both")].samples, 1);
        assert_eq!((new_totals[0].samples, base_totals[0].samples), (6, 4));
    }

    #[test]
    fn java_tiers_merge_only_when_asked() {
        let mut base = Aggregate::default();
        let mut new = Aggregate::default();
        add(
            &mut base,
            &[frame("Main.run", Kind::Interpreted, Some(4))],
            3,
        );
        add(&mut new, &[frame("Main.run", Kind::Compiled, Some(4))], 5);
        add(&mut new, &[frame("Main.run", Kind::JavaNative, None)], 1);
        let apart = CallTree::build(&[&new, &base], Identity::ByKind);
        assert_eq!(apart.nodes.len(), 4);
        let merged = CallTree::build(&[&new, &base], Identity::JavaTiersMerged);
        let kinds: Vec<Kind> = merged.functions.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, vec![Kind::JavaNative, Kind::Java]);
        let java = merged
            .nodes
            .iter()
            .position(|n| n.function == Some(1))
            .unwrap();
        assert_eq!(merged.nodes[java].self_weight[0].samples, 5);
        assert_eq!(merged.nodes[java].self_weight[1].samples, 3);
    }
}
