"""Pure rules of team activity: ISO weeks and ranges of them."""
