"""The static HTML report of a campaign and its pictures."""
