"""UI-free flows: what a question is built from and how it is judged (DESIGN.md: flows/)."""
