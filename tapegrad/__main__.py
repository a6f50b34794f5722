"""`python -m tapegrad`: run the examples from the document tapegrad grew from."""
from .examples import main

main()
