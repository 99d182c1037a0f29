"""Checks of a converted network against its source beyond one forward pass (training parity)."""
