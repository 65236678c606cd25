"""The factor-graph engine: CRFs of any structure as factor graphs, inferred by the junction
tree (exact), loopy BP on flooding or TRP schedules (Bethe) or tree-reweighted BP
(convex) (Sutton & McCallum §1.4.4, §1.5)."""
