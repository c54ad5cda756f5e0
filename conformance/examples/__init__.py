"""Small lab-style metric functions, each reproducing one behaviour found in the wild."""
