//! Conditional nodes: their handles, and the IF (with ELSE), WHILE and SWITCH nodes
//! that a handle steers, each with its bodies.

use super::build::Deps;
use super::{Described, Graph, GraphState, Node, NodeKind};
use crate::driver::conditional::{self as dc, CondType};
use crate::error::{ensure_arg, Error, ErrorKind, Result};
use std::sync::Arc;

/// A conditional node's handle: the value a kernel sets on the device
/// (`cudaGraphSetConditional`) to steer the node. Made per graph, used by
/// conditional nodes of that graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConditionalHandle {
    /// The id of the graph it was made for.
    pub graph: u64,
    /// CUDA's handle (`CUgraphConditionalHandle`), for device code.
    pub raw: u64,
}

impl Graph {
    /// Makes a conditional handle for this graph's conditional nodes. With
    /// `reset_on_launch` it takes `default_value` at the start of every
    /// launch. Without, CUDA applies no default (the value before a kernel
    /// first sets it is not specified; 0 on the drivers tested), so a
    /// nonzero `default_value` is refused
    /// ([`ErrorKind::InvalidArgument`]) rather than silently ignored; a
    /// value set by one launch is seen by the next. Needs CUDA 12.3
    /// ([`ErrorKind::NotSupported`] naming it otherwise).
    pub fn conditional_handle(
        &self,
        default_value: u32,
        reset_on_launch: bool,
    ) -> Result<ConditionalHandle> {
        ensure_arg!(
            reset_on_launch || default_value == 0,
            "default_value {default_value} without the reset-on-launch flag: CUDA applies a \
             handle's default value only with that flag; pass the \
             flag, or 0 and set the value on the device before a node reads it"
        );
        self.check_changeable()?;
        let mut st = self.state()?;
        self.inner.ctx.bind()?;
        let flags = if reset_on_launch {
            dc::ASSIGN_DEFAULT
        } else {
            0
        };
        let raw = dc::handle_create(st.raw(), self.inner.ctx.raw(), default_value, flags)?;
        st.handles.push((raw, None));
        Ok(ConditionalHandle {
            graph: self.inner.id,
            raw,
        })
    }

    /// Adds a conditional node of type `kind` steered by `handle` (made for
    /// this graph, and steering no other node) after `deps`; returns the node and its bodies: `cases`
    /// graphs for SWITCH, two for IF/ELSE, one for IF and WHILE (`cases`
    /// must then be 0 or that number). Fill the bodies with the builder
    /// calls or by capturing into them before instantiating this graph.
    /// Needs CUDA 12.3 (IF, WHILE) or 12.8 (IF/ELSE, SWITCH).
    pub fn add_conditional(
        &self,
        kind: CondType,
        handle: ConditionalHandle,
        cases: u32,
        deps: &[Node],
    ) -> Result<(Node, Vec<Graph>)> {
        let bodies = match kind {
            CondType::If | CondType::While => 1,
            CondType::IfElse => 2,
            CondType::Switch => {
                ensure_arg!(
                    cases > 0,
                    "a SWITCH node needs at least 1 case (`cases` is 0)"
                );
                cases
            }
        };
        ensure_arg!(
            cases == 0 || cases == bodies,
            "an {} node has {bodies} bodies; `cases` is {cases} (pass 0 or {bodies})",
            kind.name()
        );
        ensure_arg!(
            handle.graph == self.inner.id,
            "the conditional handle was made for another graph (handles belong to the graph \
             that holds the node)"
        );
        let mut st = self.described()?;
        let mut resolved = Deps::empty();
        self.resolve_into(&st, deps, &mut resolved)?;
        match st.st.handles.iter().find(|(h, _)| *h == handle.raw) {
            None => {
                return Err(Error::invalid_argument(
                    "the conditional handle was not made for this graph",
                ))
            }
            Some((_, Some(node))) => {
                return Err(Error::invalid_argument(format!(
                    "the conditional handle already steers node {node}: CUDA ties a handle to one \
                     conditional node (make one handle per node)"
                )))
            }
            Some((_, None)) => {}
        }
        self.inner.ctx.bind()?;
        let (raw, graphs) = dc::add(
            st.raw(),
            resolved.raw(),
            handle.raw,
            kind,
            bodies,
            self.inner.ctx.raw(),
        )?;
        if graphs.iter().any(|g| g.is_null()) {
            return Err(Error::new(
                ErrorKind::Cuda,
                "cuGraphAddNode made a conditional node without its body graphs",
            ));
        }
        let holder = Some(Arc::downgrade(&self.inner));
        let made: Vec<Graph> = graphs
            .into_iter()
            .map(|g| {
                // CUDA destroys the body with its holder: not owned here.
                let state = GraphState::new(None, g, Some(Described::empty()), Some(0));
                Self::wrap(&self.inner.ctx, state, holder.clone())
            })
            .collect();
        let node = self.push(
            &mut st,
            NodeKind::Conditional { kind, bodies },
            resolved.idx,
            raw,
        );
        self.keep_bodies(&mut st.st, node.index as usize, made.clone());
        if let Some(h) = st.st.handles.iter_mut().find(|(h, _)| *h == handle.raw) {
            h.1 = Some(node.index);
        }
        Ok((node, made))
    }
}
