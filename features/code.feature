Feature: Code memory with citations
  An agent ingests a repository into deterministic chunks, searches them
  and answers by citing chunk ids with their lines. Re-ingesting costs
  nothing when nothing changed, and a chunk keeps its id while its code
  does not change.

  Scenario: An agent ingests a repository, searches, and cites chunk ids
    Given a Trellis server
    And a repository with a Python text module, a Go reader and a Markdown guide
    When the agent ingests the repository as "demo"
    And the agent searches for "split text into lines"
    Then the first result cites the method "TextWrapper.wrap" in "lib/text.py" with its lines
    And showing that chunk prints its full source
    When the agent ingests the repository again without changes
    Then no event was appended
    When a line is added at the top of "lib/text.py" and the repository is ingested again
    Then searching for "split text into lines" cites the same chunk id
    When the agent searches for "frobnicate the quux"
    Then the answer is "not found" with suggestions for the next search

  Scenario: An agent asks a paraphrased question and cites the right chunk
    Given a running Trellis server with an embedding model and a chat model
    And a repository with a Python text module, a Go reader and a Markdown guide
    When the agent ingests the repository as "demo"
    And the server has embedded the new chunks
    And the agent searches for "cut a passage into rows no wider than a limit"
    Then the search was hybrid
    And the first result cites the method "TextWrapper.wrap" in "lib/text.py" with its lines
    When the agent asks explain_code "cut a passage into rows no wider than a limit"
    Then the answer cites that chunk and every citation is valid
