"""The reference: plain, exact Python, one documented clause per convention."""
